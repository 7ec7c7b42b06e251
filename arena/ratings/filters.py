"""Which votes count. Applied before any fit; every exclusion is counted by
reason in the snapshot, so a shrinking leaderboard is never a mystery."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

EXCLUDED_BATTLE_STATUSES = ("abandoned", "failed")
CHOICE_OUTCOME = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}


def exclusion_reason(
    *,
    model_a: str,
    model_b: str,
    choice: str,
    battle_status: str | None = None,
    flags: Iterable[str] = (),
    sides_done: bool = True,
) -> str | None:
    """Why this vote must not count, or None when it counts.

    Reasons: `abandoned` / `failed` (battle status), `flagged:<flag>` (e.g.
    `flagged:identity_leak`, the first flag wins), `side_failed` (an answer
    did not finish), `self_battle`, `unknown_choice`.
    """
    if battle_status in EXCLUDED_BATTLE_STATUSES:
        return battle_status
    for flag in flags:
        return f"flagged:{flag}"
    if not sides_done:
        return "side_failed"
    if model_a == model_b:
        return "self_battle"
    if choice not in CHOICE_OUTCOME:
        return "unknown_choice"
    return None


class ExclusionCounter(Counter[str]):
    """Counts of excluded votes by reason, as the snapshot's `excluded`."""

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.items()))
