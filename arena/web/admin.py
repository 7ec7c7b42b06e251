"""`GET /api/admin/votes/export`: every vote, streamed as JSONL, CSV or Parquet."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse

from arena.deps import AdminDep, DatabaseDep
from arena.export.db import export_rows
from arena.export.since import parse_since
from arena.export.writers import FORMATS, MEDIA_TYPES, write_rows

router = APIRouter()


@router.get(
    "/api/admin/votes/export", summary="Export votes in Chatbot Arena's clean_battle format", dependencies=[AdminDep]
)
def export_votes(
    db: DatabaseDep,
    format: str = Query("jsonl", description="jsonl, csv or parquet"),
    since: str | None = Query(None, description="only votes cast at or after this ISO 8601 time"),
    answers: bool = Query(False, description="include both final answers (answer_a, answer_b)"),
    trajectories: bool = Query(False, description="include each side's tool steps (trajectory_a, trajectory_b)"),
) -> Response:
    """Streams every vote; needs `Authorization: Bearer $ARENA_ADMIN_TOKEN`."""
    if format not in FORMATS:
        return _error(422, "invalid_request", f"format must be one of {', '.join(FORMATS)}, got {format!r}.")
    try:
        start = parse_since(since)
    except ValueError as exc:
        return _error(422, "invalid_request", str(exc))
    sessions = db.sessions

    def body() -> Iterator[bytes]:
        # its own session: the export outlives the request's dependency scope
        with sessions() as session:
            rows = export_rows(session, since=start, answers=answers, trajectories=trajectories)
            yield from write_rows(rows, format, answers=answers, trajectories=trajectories)

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return StreamingResponse(
        body(),
        media_type=MEDIA_TYPES[format],
        headers={"Content-Disposition": f'attachment; filename="geoarena-votes-{stamp}.{format}"'},
    )


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)
