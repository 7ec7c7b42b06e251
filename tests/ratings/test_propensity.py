"""Inverse-propensity weighting: oversampled pairs count as if sampled uniformly."""

from __future__ import annotations

import numpy as np
import pytest

from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.vote_log import VoteLog


def votes(per_pair: dict[tuple[int, int], tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, y = [], [], []
    for (i, j), (wins, losses) in per_pair.items():
        a += [i] * (wins + losses)
        b += [j] * (wins + losses)
        y += [1.0] * wins + [0.0] * losses
    return np.array(a), np.array(b), np.array(y)


# not transitive enough for Bradley-Terry: how often a pair is sampled moves the fit
UNIFORM = {(0, 1): (60, 40), (1, 2): (60, 40), (0, 2): (30, 70)}
OVERSAMPLED = {(0, 1): (240, 160), (1, 2): (60, 40), (0, 2): (30, 70)}


class TestInversePropensity:
    def test_weighting_by_the_sampling_probability_recovers_the_uniform_fit(self):
        names = ["x", "y", "z"]
        uniform = build_snapshot(VoteLog(names, *votes(UNIFORM)), RankOptions(ci="sandwich", style=False))
        a, b, y = votes(OVERSAMPLED)
        share = {(0, 1): 4 / 6, (1, 2): 1 / 6, (0, 2): 1 / 6}
        propensity = np.array([share[(i, j)] for i, j in zip(a, b, strict=True)])
        log = VoteLog(names, a, b, y, propensity=propensity)
        plain = build_snapshot(log, RankOptions(ci="sandwich", style=False))
        weighted = build_snapshot(log, RankOptions(ci="sandwich", style=False, inverse_propensity=True))

        def rating(snapshot):
            return {r["contender"]: r["rating"] for r in snapshot["leaderboard"]}

        assert weighted["method"]["inverse_propensity"] is True
        for name in names:
            assert rating(weighted)[name] == pytest.approx(rating(uniform)[name], abs=1e-6)
        assert abs(rating(plain)["x"] - rating(uniform)["x"]) > 5  # unweighted, the oversampled pair pulls

    def test_votes_without_a_propensity_are_not_weighted_and_the_snapshot_says_so(self):
        a, b, y = votes(UNIFORM)
        propensity = np.full(a.size, 1 / 3)
        propensity[0] = np.nan
        snap = build_snapshot(
            VoteLog(["x", "y", "z"], a, b, y, propensity=propensity),
            RankOptions(ci="sandwich", style=False, inverse_propensity=True),
        )
        assert snap["method"]["inverse_propensity"] is False
        assert any("1 vote(s) have no sampling propensity" in n for n in snap["notes"])
