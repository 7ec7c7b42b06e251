"""Expert-crowd and expert-expert agreement, with Wilson intervals and
Cohen's kappa (GeoArena reports 78% expert-crowd agreement on average:
left win 83.3%, tie 65.6%, right win 84.4%)."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from typing import Any

from sqlalchemy.orm import Session

from arena.bench.stats import agreement
from arena.review.repository import list_reviewers, review_rows

CLASSES = ("a", "tie", "b", "both_bad")
CLASS_NAMES = {"a": "left win", "tie": "tie", "b": "right win", "both_bad": "both bad"}


def review_stats(session: Session) -> dict[str, Any]:
    rows = review_rows(session)
    crowd = agreement([r.crowd for r in rows], [r.expert for r in rows], classes=CLASSES)
    by_battle: dict[str, list[str]] = defaultdict(list)
    for r in rows:  # ordered by reviewer within a battle
        by_battle[r.battle_id].append(r.expert)
    pairs = [pair for choices in by_battle.values() for pair in combinations(choices, 2)]
    experts = agreement([a for a, _ in pairs], [b for _, b in pairs], classes=CLASSES)
    return {
        "reviews": len(rows),
        "battles_reviewed": len(by_battle),
        "reviewers": [{"name": r.name, "active": r.active, "reviews": r.reviews} for r in list_reviewers(session)],
        "expert_crowd": crowd.as_dict(),
        "expert_expert": {
            "pairs": len(pairs),
            "battles": sum(len(c) > 1 for c in by_battle.values()),
            **experts.as_dict(),
        },
    }
