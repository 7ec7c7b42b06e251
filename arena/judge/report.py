"""How a model judge agrees with the human votes (GeoArena asked whether a
vision model could replace its voters), and the board its votes make."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from arena.bench.stats import agreement, wilson
from arena.judge.repository import JudgedBattle, judged_battles, judges

CLASSES = ("a", "tie", "b", "both_bad")  # the human vote: left win, tie, right win, both bad


def judge_report(session: Session, judge: str) -> dict[str, Any]:
    battles = judged_battles(session, judge)
    result = agreement([b.human for b in battles], [b.judge for b in battles], classes=CLASSES)
    return {
        "judge": judge,
        "battles": len(battles),
        **result.as_dict(),
        "position_consistency": wilson(sum(b.consistent for b in battles), len(battles)).as_dict(),
        "board": board(battles),
    }


def all_judge_reports(session: Session) -> list[dict[str, Any]]:
    return [judge_report(session, judge) for judge in judges(session)]


def board(battles: Sequence[JudgedBattle]) -> list[dict[str, Any]]:
    """Win rate per contender by the judge's votes and by the humans' on the
    same battles (ties and both-bad count half), with Wilson intervals."""
    score: dict[str, dict[str, float]] = defaultdict(lambda: {"judge": 0.0, "human": 0.0, "n": 0})
    for b in battles:
        for side, name in (("a", b.model_a), ("b", b.model_b)):
            score[name]["n"] += 1
            score[name]["judge"] += _points(b.judge, side)
            score[name]["human"] += _points(b.human, side)
    rows: list[dict[str, Any]] = []
    for name, s in score.items():
        n = int(s["n"])
        judged = wilson(s["judge"], n)
        rows.append(
            {
                "contender": name,
                "battles": n,
                "judge_win_rate": round(s["judge"] / n, 4),
                "judge_ci_low": judged.as_dict()["ci_low"],
                "judge_ci_high": judged.as_dict()["ci_high"],
                "human_win_rate": round(s["human"] / n, 4),
            }
        )
    rows.sort(key=lambda r: -float(r["judge_win_rate"]))
    return rows


def _points(choice: str, side: str) -> float:
    if choice == side:
        return 1.0
    return 0.5 if choice in ("tie", "both_bad") else 0.0
