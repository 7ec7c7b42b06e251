"""Outages answered as outages: when the database or the image store does not answer, a
request gets `503` with `Retry-After` and a sentence for a person, through the same
middleware as any page (security headers, request id), and the log gets one line, not a
traceback per request for as long as the outage lasts."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sql

from arena.images.store import StoreUnavailable

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 30
# What a lost, refused, timed-out or locked database raises through SQLAlchemy (psycopg's and
# sqlite3's own errors arrive wrapped in these).
DATABASE_DOWN = (sql.OperationalError, sql.InterfaceError, sql.TimeoutError, sql.DisconnectionError)
OUTAGES: dict[type[Exception], tuple[str, str]] = {
    **{
        kind: ("database_unavailable", "The arena's database is not answering right now; please try again shortly.")
        for kind in DATABASE_DOWN
    },
    StoreUnavailable: (
        "image_store_unavailable",
        "The arena's photo store is not answering right now; please try again shortly.",
    ),
}


def install(app: FastAPI) -> None:
    """Answer each kind of outage with its 503 (handlers inside the middleware stack)."""
    for kind in OUTAGES:
        app.add_exception_handler(kind, _outage)


async def _outage(request: Request, exc: Exception) -> JSONResponse:
    code, message = next(found for kind, found in OUTAGES.items() if isinstance(exc, kind))
    cause = getattr(exc, "orig", None) or exc
    log.warning("%s %s: %s (%s)", request.method, request.url.path, code, type(cause).__name__)
    return JSONResponse(
        {"error": code, "message": message},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"},
    )
