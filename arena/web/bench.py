"""`GET /api/bench`: benchmark accuracy beside the preference rating, and the
model judges' agreement with the voters; the leaderboard page shows it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from arena.bench.report import all_reports
from arena.deps import SessionDep
from arena.judge.report import all_judge_reports
from arena.ratings.snapshot import latest_snapshot

router = APIRouter()

EMPTY_MESSAGE = "No benchmark results yet: `arena bench --dataset FILE --contenders NAME,...` stores them."


@router.get("/api/bench", summary="Benchmark accuracy beside the preference ratings")
def bench_api(session: SessionDep) -> JSONResponse:
    """Each (suite, grader) board with accuracy and Wilson 95% intervals, each
    contender's rating from the latest snapshot, and the model judges."""
    snapshot = latest_snapshot(session) or {}
    ratings = {row["contender"]: row for row in snapshot.get("leaderboard", [])}
    boards = [with_ratings(board, ratings) for board in all_reports(session)]
    judges = all_judge_reports(session)
    body: dict[str, Any] = {
        "status": "ok" if boards or judges else "empty",
        "ratings_computed_at": snapshot.get("computed_at"),
        "boards": boards,
        "judges": judges,
    }
    if not boards:
        body["message"] = EMPTY_MESSAGE
    return JSONResponse(body)


def with_ratings(board: dict[str, Any], ratings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rows = []
    for row in board["contenders"]:
        rated = ratings.get(row["contender"])
        rows.append(
            {
                **row,
                "rating": None
                if rated is None
                else {k: rated.get(k) for k in ("rating", "ci_low", "ci_high", "rank", "votes")},
            }
        )
    board = {**board, "contenders": rows}
    board.pop("offline_report", None)
    return board
