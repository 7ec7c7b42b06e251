"""Probes for proxies, compose and Kubernetes.

`/healthz` says the process answers (a liveness probe: restart me if not).
`/readyz` says this replica can serve a battle now (a readiness probe: send
me traffic): the database answers a real query, its schema is at the
migration head this code expects, the contender pool is loaded, the
gatekeeper's model is in memory, the place-name index is built (its 7-15
CPU-seconds at start-up would otherwise hold back the first battles' streams)
and the image store takes a photo now (the local directory can be written, the
S3 bucket answers). A failing check answers 503 and names it.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import select, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from arena.db.migrate import current_revisions, head_revisions
from arena.db.session import Database
from arena.db.tables import Battle
from arena.deps import ServicesDep
from arena.images.store import ImageStore, StoreUnavailable

router = APIRouter(tags=["probes"])

DATABASE_TIMEOUT = 5.0  # seconds: a probe must answer even when the database hangs
STORE_TIMEOUT = 5.0
NO_STORE = {"Cache-Control": "no-store"}


@router.get("/healthz", summary="The process is up")
async def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"}, headers=NO_STORE)


@router.get("/readyz", summary="This replica can serve battles (503 names the failing check)")
async def readyz(services: ServicesDep) -> JSONResponse:
    checks: dict[str, str] = {}
    problems: list[str] = []

    def check(name: str, problem: str | None) -> None:
        checks[name] = "ok" if problem is None else "failing"
        if problem is not None:
            problems.append(f"{name}: {problem}")

    name, problem = await _database(services.database)
    if name == "migrations":  # it answered: the database itself is fine
        check("database", None)
    check(name, problem)
    contenders = len(services.pool)
    check("pool", None if contenders >= 2 else f"{contenders} contender(s) loaded; a battle needs two")
    check("gatekeeper", None if services.gatekeeper.warmed else "the prompt classifier is not loaded yet")
    check("place_names", None if services.place_names.is_set() else "the place-name index is still being built")
    check("accepting", "this replica is shutting down" if services.battle_runs.draining else None)
    check("images", await _image_store(services.images))
    if problems:
        return JSONResponse(
            {
                "status": "not_ready",
                "error": "not_ready",
                "message": "Not ready. " + "; ".join(problems),
                "checks": checks,
            },
            status_code=503,
            headers=NO_STORE,
        )
    return JSONResponse({"status": "ready", "checks": checks}, headers=NO_STORE)


async def _database(database: Database) -> tuple[str, str | None]:
    """("database", problem) or ("migrations", problem): a reachable database
    at the wrong revision is a migration problem, not a database one."""
    try:
        found = await asyncio.wait_for(database.run(_revisions), DATABASE_TIMEOUT)
    except TimeoutError:
        return "database", f"no answer within {DATABASE_TIMEOUT:.0f} s"
    except SQLAlchemyError as exc:
        return "database", f"unreachable ({type(getattr(exc, 'orig', None) or exc).__name__})"
    expected = head_revisions()
    if found != expected:
        at = ", ".join(found) or "no revision"
        return "migrations", (
            f"the database is at {at}, this code expects {', '.join(expected)} (run `arena db upgrade`)"
        )
    return "migrations", None


async def _image_store(images: ImageStore) -> str | None:
    try:
        await asyncio.wait_for(asyncio.to_thread(images.check), STORE_TIMEOUT)
    except TimeoutError:
        return f"the image store did not answer within {STORE_TIMEOUT:.0f} s"
    except StoreUnavailable as exc:
        return str(exc)
    return None


def _revisions(session: Session) -> tuple[str, ...]:
    session.execute(text("SELECT 1")).scalar_one()
    connection = session.connection()
    revisions = current_revisions(connection)
    if revisions == head_revisions():
        session.execute(select(Battle.id).limit(1)).all()  # a real table answers, not just the server
    return revisions
