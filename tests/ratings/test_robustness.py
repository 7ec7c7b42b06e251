"""The robustness figure against exact refits, and on the snapshot."""

from __future__ import annotations

from itertools import combinations_with_replacement

import numpy as np
import pytest
from scipy.special import expit

from arena.ratings import bt
from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.robustness import votes_to_swap
from arena.ratings.snapshot import describe
from arena.ratings.vote_log import VoteLogBuilder


def simulated(n: int, votes: int, seed: int, spread: float = 0.5) -> bt.Matchups:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, spread, n)
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    y = np.where(rng.random(votes) < expit(theta[a] - theta[b]), 1.0, 0.0)
    y[rng.random(votes) < 0.2] = 0.5
    return bt.aggregate(a, b, y, n)


def refit_gap(m: bt.Matchups, counts: np.ndarray, upper: int, lower: int) -> float:
    theta = bt.fit_bt(bt.Matchups(m.n, m.a, m.b, m.outcome, counts)).theta
    return float(theta[upper] - theta[lower])


def exact_greedy(m: bt.Matchups, upper: int, lower: int) -> int:
    """Remove one vote at a time, each time the one whose exact refit closes the gap most."""
    counts = m.count.copy()
    removed = 0
    while refit_gap(m, counts, upper, lower) > 0:
        best, row = np.inf, -1
        for r in np.flatnonzero(counts > 0):
            counts[r] -= 1
            gap = refit_gap(m, counts, upper, lower)
            counts[r] += 1
            if gap < best:
                best, row = gap, r
        counts[row] -= 1
        removed += 1
    return removed


def top_two(m: bt.Matchups) -> tuple[np.ndarray, int, int]:
    theta = bt.fit_bt(m).theta
    order = np.argsort(-theta)
    return theta, int(order[0]), int(order[1])


class TestAgainstExactRefits:
    @pytest.mark.parametrize("seed", range(8))
    def test_within_twenty_percent_of_greedy_exact_refits(self, seed):
        m = simulated(4, 300, seed)
        theta, first, second = top_two(m)
        swap = votes_to_swap(m, theta, first, second)
        exact = exact_greedy(m, first, second)
        assert swap.votes is not None
        assert abs(swap.votes - exact) <= max(1, 0.2 * exact), (swap.votes, exact, swap.linear_estimate)

    def test_the_removal_really_swaps_and_one_fewer_cannot(self):
        """Exhaustive on a small case: the count is the true minimum."""
        m = simulated(3, 60, seed=1, spread=0.3)
        theta, first, second = top_two(m)
        swap = votes_to_swap(m, theta, first, second)
        assert swap.votes is not None and 1 <= swap.votes <= 6
        rows = [r for r in range(m.count.size) for _ in range(int(m.count[r]))]

        def swaps_with(k: int) -> bool:
            for chosen in combinations_with_replacement(sorted(set(rows)), k):
                counts = m.count.copy()
                np.subtract.at(counts, list(chosen), 1)
                if (counts >= 0).all() and refit_gap(m, counts, first, second) <= 0:
                    return True
            return False

        assert swaps_with(swap.votes)
        assert not swaps_with(swap.votes - 1)

    def test_larger_board_matches_greedy_exact_refits(self):
        m = simulated(6, 3000, seed=5, spread=0.3)
        theta, first, second = top_two(m)
        swap = votes_to_swap(m, theta, first, second)
        exact = exact_greedy(m, first, second)
        assert swap.votes is not None and abs(swap.votes - exact) <= max(1, 0.2 * exact)

    def test_a_contender_that_never_lost_to_the_other_cannot_be_swapped_by_removals(self):
        # two contenders, the first won every battle: removing wins never makes it lose
        m = bt.aggregate(np.zeros(5, np.int64), np.ones(5, np.int64), np.ones(5), 2)
        fit = bt.fit_bt(m)
        assert votes_to_swap(m, fit.theta, 0, 1).votes is None


class TestOnTheSnapshot:
    def test_snapshot_has_robustness_and_provisional_rows(self):
        rng = np.random.default_rng(3)
        builder = VoteLogBuilder()
        theta = {"alpha": 0.6, "beta": 0.4, "gamma": 0.0, "delta": -0.5}
        names = list(theta)
        for i in range(1200):
            x, z = rng.choice(4, 2, replace=False)
            y = float(rng.random() < expit(theta[names[x]] - theta[names[z]]))
            builder.add(names[x], names[z], y, tstamp=float(i), voter=f"v{i % 200}")
        for i in range(12):  # a newcomer with a handful of votes
            builder.add("newcomer", names[i % 4], float(i % 2), tstamp=2000.0 + i, voter=f"n{i}")
        snapshot = build_snapshot(builder.build(), RankOptions(rounds=5, style=False, provisional_votes=50))
        rows = {r["contender"]: r for r in snapshot["leaderboard"]}
        assert rows["newcomer"]["provisional"] is True
        assert not any(rows[n]["provisional"] for n in names)
        robust = snapshot["robustness"]
        assert [p["position"] for p in robust["pairs"]] == [1, 2, 3]
        assert all(p["upper"] != "newcomer" and p["lower"] != "newcomer" for p in robust["pairs"])
        assert robust["top_swap_votes"] == robust["pairs"][0]["votes"] > 0
        assert describe(robust) == f"#1 would change if {robust['top_swap_votes']:,} votes were removed (out of 1,212)."

    def test_words(self):
        assert describe(None) is None
        assert (
            describe({"pairs": [{"votes": 1}], "votes_total": 10})
            == "#1 would change if 1 vote were removed (out of 10)."
        )
        assert describe({"pairs": [{"votes": None}]}) == "#1 would not change by removing votes alone."
