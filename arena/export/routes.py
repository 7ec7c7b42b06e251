"""`GET /api/admin/votes/export`: every vote, streamed as JSONL, CSV or Parquet."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from datetime import UTC, datetime

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from arena.export.db import export_rows
from arena.export.writers import FORMATS, MEDIA_TYPES, write_rows

router = APIRouter()


@router.get("/api/admin/votes/export", summary="Export votes in Chatbot Arena's clean_battle format")
def export_votes(
    request: Request,
    format: str = Query("jsonl", description="jsonl, csv or parquet"),
    since: str | None = Query(None, description="only votes cast at or after this ISO 8601 time"),
    answers: bool = Query(False, description="include both final answers (answer_a, answer_b)"),
) -> Response:
    """Streams every vote; needs `Authorization: Bearer $ARENA_ADMIN_TOKEN`."""
    token = request.app.state.settings.admin_token
    if not token:
        return _error(503, "export_disabled", "The export is off: set ARENA_ADMIN_TOKEN on the server to enable it.")
    if not _authorised(request.headers.get("authorization", ""), token):
        return _error(401, "unauthorised", "Send the admin token as `Authorization: Bearer <token>`.",
                      headers={"WWW-Authenticate": 'Bearer realm="geoarena-admin"'})
    if format not in FORMATS:
        return _error(422, "invalid_request", f"format must be one of {', '.join(FORMATS)}, got {format!r}.")
    try:
        start = parse_since(since)
    except ValueError as exc:
        return _error(422, "invalid_request", str(exc))
    sessions = request.app.state.sessionmaker

    def body() -> Iterator[bytes]:
        # its own session: the export outlives the request's dependency scope
        with sessions() as session:
            yield from write_rows(export_rows(session, since=start, answers=answers), format, answers=answers)

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return StreamingResponse(
        body(),
        media_type=MEDIA_TYPES[format],
        headers={"Content-Disposition": f'attachment; filename="geoarena-votes-{stamp}.{format}"'},
    )


def parse_since(text: str | None) -> datetime | None:
    """ISO 8601 date or time; a time without zone is UTC. Returned in UTC:
    SQLite keeps times as UTC text and compares them as text, ignoring an offset."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"since must be an ISO 8601 date or time such as 2026-01-31T12:00:00Z, got {text!r}") from exc
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _authorised(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    # compare_digest on bytes of both: constant time whatever the input
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)
