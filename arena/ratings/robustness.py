"""How fragile is an order on the board: the fewest votes whose removal swaps two contenders.

Removing one vote (a, b, y) from a Bradley-Terry fit moves the strengths by
about `H^-1 (p - y) (e_a - e_b)` (one Newton step from the full-data
optimum; H is the Hessian of the negative log-likelihood, p the predicted
chance that a wins). So its effect on the gap between contenders i and j is
`(p - y) (w_a - w_b)` with `w = H^-1 (e_i - e_j)`: an influence score per
aggregated row, the same for every vote in it. Removing the votes with the
most negative scores first is the approximate maximum-influence perturbation
(Broderick et al.); arXiv 2508.11847 used it to show how few of Chatbot
Arena's votes decide its #1.

The linear sum drifts once many votes go, so `votes_to_swap` uses it only
to choose which votes to drop: it removes them, refits exactly (a warm
Newton fit on pair sums, milliseconds), recomputes the scores on what is
left while the order holds, and finally bisects the last batch with exact
refits. The count it returns is therefore one whose removal really swaps the
pair (verified by refit), not an extrapolation.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from scipy.special import expit

from arena.ratings import bt
from arena.ratings.bt import FloatArray, Matchups

MAX_ROUNDS = 30


@dataclass(frozen=True)
class Swap:
    """The fewest removals found that put `lower` at or above `upper`."""

    upper: int  # contender index, rated higher now
    lower: int
    votes: int | None  # None: removing votes cannot swap them
    linear_estimate: int | None  # the first-order count before any refit


def votes_to_swap(m: Matchups, theta: FloatArray, upper: int, lower: int) -> Swap:
    """The fewest votes (found greedily by influence, checked by exact refits)
    whose removal leaves `lower` rated at least as high as `upper`."""
    remaining = m.count.copy()
    current = theta
    linear: int | None = None
    removed = 0
    for _ in range(MAX_ROUNDS):
        gap = float(current[upper] - current[lower])
        if gap <= 0:
            return Swap(upper, lower, removed, linear if linear is not None else removed)
        order, needed = _cheapest_removals(m, remaining, current, upper, lower, gap)
        if linear is None:
            linear = needed
        if needed is None:
            return Swap(upper, lower, None, linear)
        batch = _take(order, remaining, needed)
        trial = _refit(m, remaining - batch, current)
        if trial[upper] - trial[lower] > 0:
            remaining, current, removed = remaining - batch, trial, removed + needed
            continue
        # the batch swaps them: find the smallest prefix of it that still does
        lo, hi = 0, needed  # lo does not swap (known), hi does
        while hi - lo > 1:
            mid = (lo + hi) // 2
            fit = _refit(m, remaining - _take(order, remaining, mid), current)
            if fit[upper] - fit[lower] > 0:
                lo = mid
            else:
                hi = mid
        return Swap(upper, lower, removed + hi, linear)
    return Swap(upper, lower, None, linear)


def board_robustness(
    m: Matchups, theta: FloatArray, ranked: list[int], names: list[str], top: int = 10
) -> dict[str, Any]:
    """The snapshot's `robustness`: for each adjacent pair among the first
    `top` of `ranked` (contender indices, best first), the votes whose removal swaps them."""
    pairs: list[dict[str, Any]] = []
    for position, (upper, lower) in enumerate(pairwise(ranked[:top]), start=1):
        swap = votes_to_swap(m, theta, upper, lower)
        pairs.append(
            {
                "position": position,
                "upper": names[upper],
                "lower": names[lower],
                "votes": swap.votes,
                "linear_estimate": swap.linear_estimate,
            }
        )
    first = pairs[0]["votes"] if pairs else None
    return {
        "method": "influence-guided removal of votes, each count checked by an exact refit",
        "votes_total": round(m.total),
        "top_swap_votes": first,
        "top_swap_share": (float(first) / m.total) if first is not None and m.total else None,
        "pairs": pairs,
    }


# -- helpers -----------------------------------------------------------------


def _cheapest_removals(
    m: Matchups, remaining: FloatArray, theta: FloatArray, upper: int, lower: int, gap: float
) -> tuple[np.ndarray, int | None]:
    """Rows in the order their removal closes the gap fastest, and how many
    votes the linear approximation says must go."""
    p = expit(theta[m.a] - theta[m.b])
    hessian = bt._laplacian(m.a, m.b, remaining * p * (1 - p), m.n)
    # H is singular along the all-ones direction; the gap is blind to it, so
    # any generalised inverse gives the same scores.
    contrast = np.zeros(m.n)
    contrast[upper], contrast[lower] = 1.0, -1.0
    w = np.linalg.solve(hessian + np.ones((m.n, m.n)) / m.n, contrast)
    per_vote = (p - m.outcome) * (w[m.a] - w[m.b])  # change of the gap when one vote of the row goes
    helpful = np.flatnonzero((per_vote < 0) & (remaining > 0))
    order = helpful[np.argsort(per_vote[helpful], kind="stable")]
    closed = np.cumsum(-per_vote[order] * remaining[order])
    reach = int(np.searchsorted(closed, gap))
    if reach >= order.size:
        return order, None
    before = float(closed[reach - 1]) if reach else 0.0
    partial = int(np.ceil((gap - before) / -per_vote[order[reach]]))
    needed = int(remaining[order[:reach]].sum()) + max(partial, 1)
    return order, needed


def _take(order: np.ndarray, remaining: FloatArray, k: int) -> FloatArray:
    """Counts per row of the first k votes along `order`."""
    taken = np.zeros_like(remaining)
    left = float(k)
    for row in order:
        if left <= 0:
            break
        grab = min(remaining[row], left)
        taken[row] = grab
        left -= grab
    return taken


def _refit(m: Matchups, counts: FloatArray, init: FloatArray) -> FloatArray:
    reduced = Matchups(m.n, m.a, m.b, m.outcome, counts)
    return bt.fit_bt(reduced, init=init).theta
