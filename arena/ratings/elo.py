"""Online Elo, kept for reference next to Bradley-Terry.

Elo depends on the order of the votes (a recent upset moves it more than
an old one), which is why the leaderboard's ratings are Bradley-Terry; the
Elo column shows how a classic arena would have scored the same votes.
"""

from __future__ import annotations

import numpy as np

from arena.ratings.bt import FloatArray, IntArray
from arena.ratings.options import BASE, INIT_RATING, SCALE

K_FACTOR = 4.0


def online_elo(
    a: IntArray,
    b: IntArray,
    outcome: FloatArray,
    n: int,
    *,
    k: float = K_FACTOR,
    order: IntArray | None = None,
) -> FloatArray:
    """Elo ratings after replaying the votes in `order` (default: as given).

    `outcome` is the score of side a: 1, 0 or 0.5 (tie or both bad).
    """
    ratings = [INIT_RATING] * n
    a, b, outcome = np.asarray(a), np.asarray(b), np.asarray(outcome)
    if order is not None:
        order = np.asarray(order)
        a, b, outcome = a[order], b[order], outcome[order]
    base, scale = BASE, SCALE  # locals: the loop runs once per vote
    # plain Python lists: a million scalar numpy accesses would be 10x slower
    for i, j, s in zip(a.tolist(), b.tolist(), outcome.tolist(), strict=True):
        ri = ratings[i]
        rj = ratings[j]
        delta = k * (s - 1.0 / (1.0 + base ** ((rj - ri) / scale)))
        ratings[i] = ri + delta
        ratings[j] = rj - delta
    return np.asarray(ratings)
