"""`/metrics` in Prometheus' text format (the official `prometheus_client`).

The counters live in this process's default registry, as Prometheus expects
of one process: a scrape of a replica reads that replica. `ARENA_METRICS`
chooses who may read them: `admin` (default: `Authorization: Bearer
$ARENA_ADMIN_TOKEN`), `public`, or `off` (404).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, Counter, generate_latest

from arena.deps import SettingsDep, require_admin
from arena.errors import ClientError

router = APIRouter(tags=["probes"])

BATTLES_STARTED = Counter(
    "arena_battles_started",
    "Battles started, per contender drawn into them",
    ["contender"],
)
SIDES_FINISHED = Counter(
    "arena_battle_sides_finished",
    "Contender answers that finished (outcome done) or failed",
    ["contender", "outcome"],
)
VOTES = Counter("arena_votes", "Votes stored, by choice", ["choice"])
GATEKEEPER_REFUSALS = Counter(
    "arena_gatekeeper_refusals",
    "Prompts the gatekeeper refused as not geographic",
    ["classifier"],
)


def side_finished(contender: str, ok: bool) -> None:
    """A `BattleHooks.on_side_result` hook."""
    SIDES_FINISHED.labels(contender=contender, outcome="done" if ok else "failed").inc()


@router.get("/metrics", summary="Prometheus metrics (admin token unless ARENA_METRICS=public)")
def metrics(request: Request, settings: SettingsDep) -> Response:
    if settings.metrics == "off":
        raise ClientError(404, "not_found", "Metrics are switched off on this server (ARENA_METRICS=off).")
    if settings.metrics == "admin":
        require_admin(request, settings)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})
