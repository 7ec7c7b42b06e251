"""Elo, vote filters and the snapshot dict."""

from __future__ import annotations

import numpy as np
import pytest

from arena.ratings.elo import online_elo
from arena.ratings.filters import exclusion_reason
from arena.ratings.leaderboard import (
    RankOptions,
    build_snapshot,
)
from arena.ratings.snapshot import Snapshot
from arena.ratings.vote_log import VoteLog, VoteLogBuilder
from tests.ratings.simulate import simulate


class TestElo:
    def test_one_win_between_equals_moves_k_over_two(self):
        ratings = online_elo(np.array([0]), np.array([1]), np.array([1.0]), 2)
        assert ratings.tolist() == [1002.0, 998.0]

    def test_order_matters_and_ties_pull_together(self):
        a, b = np.array([0, 0]), np.array([1, 1])
        ratings = online_elo(a, b, np.array([1.0, 0.5]), 2)
        # after 1002/998 a tie moves 4 * (0.5 - P(1002 beats 998)) toward each other
        expected = 1.0 / (1.0 + 10 ** ((998 - 1002) / 400))
        assert ratings[0] == pytest.approx(1002 + 4 * (0.5 - expected))
        replayed = online_elo(a, b, np.array([1.0, 0.5]), 2, order=np.array([1, 0]))
        assert replayed[0] != pytest.approx(ratings[0])


class TestFilters:
    @pytest.mark.parametrize(
        ("kwargs", "reason"),
        [
            ({"battle_status": "abandoned"}, "abandoned"),
            ({"battle_status": "failed"}, "failed"),
            ({"flags": ["identity_leak"]}, "flagged:identity_leak"),
            ({"sides_done": False}, "side_failed"),
            ({"model_b": "x"}, "self_battle"),
            ({"choice": "maybe"}, "unknown_choice"),
            ({}, None),
        ],
    )
    def test_reasons(self, kwargs, reason):
        base = {"model_a": "x", "model_b": "y", "choice": "a", "battle_status": "voted"}
        assert exclusion_reason(**{**base, **kwargs}) == reason


def two_contender_log() -> VoteLog:
    builder = VoteLogBuilder()
    for i in range(3):
        builder.add(
            "geo-large",
            "geo-small+gate",
            1.0,
            features_a=(50, 0, 0, 0, 1, 0),
            features_b=(10, 0, 0, 0, 0, 0),
            tstamp=i,
            gate_b=True,
            language="en",
        )
    builder.add(
        "geo-small+gate",
        "geo-large",
        1.0,
        features_a=(40, 1, 0, 0, 1, 0),
        features_b=(45, 0, 0, 0, 0, 0),
        tstamp=3,
        gate_a=True,
        language="fr",
    )
    return builder.build()


class TestSnapshot:
    def test_worked_example_with_two_contenders(self):
        snap = build_snapshot(two_contender_log(), RankOptions(ci="sandwich"), excluded={"flagged:identity_leak": 2})
        assert snap["votes_used"] == 4 and snap["excluded"] == {"flagged:identity_leak": 2}
        top, bottom = snap["leaderboard"]
        assert (top["contender"], bottom["contender"]) == ("geo-large", "geo-small+gate")
        assert top["rating"] - bottom["rating"] == pytest.approx(400 * np.log10(3), abs=1e-3)
        assert top["win_rate"] == 0.75 and top["votes"] == 4 and bottom["gate"] is True
        assert snap["matrices"]["battles"] == [[0, 4], [4, 0]]
        assert snap["matrices"]["win_rate"] == [[None, 0.75], [0.25, None]]
        names = {c["name"]: c for c in snap["categories"]}
        assert names["language:en"]["votes"] == 3 and names["language:en"]["too_few_votes"] is True
        assert names["gate vs plain"]["votes"] == 4
        assert [c["feature"] for c in snap["style"]["coefficients"]] == [
            "length",
            "list",
            "header",
            "emphasis",
            "gps",
            "tools",
        ]

    def test_a_separated_style_fit_is_flagged_in_words(self):
        # Here the longer answer always wins: length separates the votes perfectly.
        snap = build_snapshot(two_contender_log(), RankOptions(ci="sandwich"))
        assert snap["style"]["separated"] is True
        reason = Snapshot.model_validate(snap).style_withheld()
        assert reason is not None and "appear at 70 votes" in reason and "there are 4 so far" in reason

    def test_rank_counts_only_contenders_surely_better(self):
        rng = np.random.default_rng(0)
        truth = np.array([0.0, 0.02, 1.5])
        a, b, y, fa, fb = simulate(truth, 3000, rng)
        log = VoteLog(["c0", "c1", "c2"], a, b, y, fa, fb, np.arange(y.size, dtype=float))
        snap = build_snapshot(log, RankOptions(rounds=50, seed=1))
        rows = {r["contender"]: r for r in snap["leaderboard"]}
        assert rows["c2"]["rank"] == 1
        assert rows["c0"]["rank"] == rows["c1"]["rank"] == 2  # overlapping intervals share a rank
        for row in snap["leaderboard"]:
            assert row["ci_low"] <= row["rating"] <= row["ci_high"]
        assert snap["style"]["separated"] is False and snap["notes"] == []

    def test_same_seed_same_snapshot(self):
        rng = np.random.default_rng(2)
        a, b, y, fa, fb = simulate(np.array([0.0, 0.4, 0.8]), 1500, rng)
        log = VoteLog(["x", "y", "z"], a, b, y, fa, fb, np.arange(y.size, dtype=float))
        first = build_snapshot(log, RankOptions(rounds=30, seed=7))
        second = build_snapshot(log, RankOptions(rounds=30, seed=7))
        for key in ("leaderboard", "style", "categories", "matrices"):
            assert first[key] == second[key]

    def test_anchor(self):
        snap = build_snapshot(
            two_contender_log(), RankOptions(ci="sandwich", anchor="geo-small+gate", anchor_rating=1000)
        )
        rows = {r["contender"]: r for r in snap["leaderboard"]}
        assert rows["geo-small+gate"]["rating"] == 1000.0
        assert rows["geo-large"]["rating"] == pytest.approx(1000 + 400 * np.log10(3), abs=1e-3)

    def test_no_votes_is_an_empty_snapshot_not_an_error(self):
        snap = build_snapshot(VoteLogBuilder().build())
        assert snap["votes_used"] == 0 and snap["leaderboard"] == [] and snap["notes"] == ["no votes yet"]

    def test_bad_options_are_refused_in_words(self):
        with pytest.raises(ValueError, match="unknown CI method"):
            RankOptions(ci="jackknife")
