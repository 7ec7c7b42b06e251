"""Tie models: Davidson and draws-ignored beside the half-win default."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize

from arena.ratings import bt, ties
from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.vote_log import VoteLog


def davidson_votes(theta: np.ndarray, log_nu: float, votes: int, rng: np.random.Generator):  # type: ignore[no-untyped-def]
    """(a, b, outcome) drawn from a Davidson model with known strengths and nu."""
    n = theta.size
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    pa, pb, _ = ties.probabilities(theta, log_nu, a, b)
    u = rng.random(votes)
    outcome = np.where(u < pa, 1.0, np.where(u < pa + pb, 0.0, 0.5))
    return a, b, outcome


class TestDavidson:
    def test_matches_a_general_optimiser_on_a_worked_example(self):
        # 3 contenders; every pair has wins both ways and a tie
        a = np.array([0, 0, 0, 1, 1, 1, 2, 2, 0, 1, 2])
        b = np.array([1, 1, 1, 2, 2, 2, 0, 0, 2, 0, 1])
        y = np.array([1, 1, 0.5, 1, 0, 0.5, 1, 0.5, 0, 0, 0.5])
        m = bt.aggregate(a, b, y, 3)
        fit = ties.fit_davidson(m)

        def nll(params: np.ndarray) -> float:
            theta = np.r_[0.0, params[:2]]
            return -ties.log_likelihood(theta, params[2], m)

        best = minimize(
            nll, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000}
        )
        expected = np.r_[0.0, best.x[:2]]
        assert fit.theta - fit.theta[0] == pytest.approx(expected, abs=1e-5)
        assert fit.log_nu == pytest.approx(best.x[2], abs=1e-5)
        assert fit.gradient_norm < 1e-8 and not fit.regularized

    def test_recovers_known_strengths_and_tie_parameter(self):
        rng = np.random.default_rng(3)
        truth = np.array([-0.8, -0.2, 0.0, 0.5, 1.1])
        a, b, y = davidson_votes(truth, np.log(0.6), 60_000, rng)
        fit = ties.fit_davidson(bt.aggregate(a, b, y, 5))
        assert fit.theta == pytest.approx(truth - truth.mean(), abs=0.04)
        assert fit.nu == pytest.approx(0.6, rel=0.05)

    def test_sandwich_and_bootstrap_intervals_agree_and_cover(self):
        rng = np.random.default_rng(5)
        truth = np.array([0.0, 0.3, 0.9, -0.4])
        a, b, y = davidson_votes(truth, np.log(0.8), 8000, rng)
        m = bt.aggregate(a, b, y, 4)
        fit = ties.fit_davidson(m)
        sd_sandwich = np.sqrt(np.diag(ties.sandwich_davidson(m, fit)))
        rounds = ties.bootstrap_davidson(m, fit, 200, np.random.default_rng(0))
        sd_boot = rounds.std(axis=0)
        assert sd_boot == pytest.approx(sd_sandwich, rel=0.2)
        assert np.all(np.abs(fit.theta - (truth - truth.mean())) < 3.5 * sd_sandwich)

    def test_without_ties_it_is_bradley_terry(self):
        rng = np.random.default_rng(1)
        a, b, y = davidson_votes(np.array([0.0, 0.5, 1.0]), np.log(0.5), 3000, rng)
        decisive = y != 0.5
        m = bt.aggregate(a[decisive], b[decisive], y[decisive], 3)
        fit = ties.fit_davidson(m)
        # log nu gets the weak prior and runs very negative; strengths are BT's
        assert fit.nu < 1e-2
        assert fit.theta == pytest.approx(bt.fit_bt(m).theta, abs=2e-3)

    def test_someone_who_never_lost_stays_finite(self):
        a, b, y = np.array([0, 0, 1, 1]), np.array([1, 1, 2, 2]), np.array([1.0, 0.5, 1.0, 1.0])
        fit = ties.fit_davidson(bt.aggregate(a, b, y, 3))
        assert fit.regularized and np.all(np.isfinite(fit.theta)) and fit.theta[0] > fit.theta[2]


class TestDrawsIgnored:
    def test_drop_ties_keeps_only_decisive_rows(self):
        m = bt.aggregate(np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([1.0, 0.5, 0.5]), 2)
        kept = ties.drop_ties(m)
        assert kept.total == 1 and kept.outcome.tolist() == [1.0]


class TestSnapshotTieModels:
    def log(self) -> VoteLog:
        rng = np.random.default_rng(9)
        a, b, y = davidson_votes(np.array([0.0, 0.4, 0.9]), np.log(0.7), 3000, rng)
        return VoteLog(
            ["x", "y", "z"],
            a,
            b,
            y,
            tstamp=np.arange(y.size, dtype=float),
            categories={"plain only": np.arange(y.size)},
        )

    def test_the_snapshot_says_which_tie_model_made_it(self):
        log = self.log()
        half = build_snapshot(log, RankOptions(ci="sandwich", style=False))
        davidson = build_snapshot(log, RankOptions(ci="sandwich", style=False, ties="davidson"))
        ignored = build_snapshot(log, RankOptions(rounds=20, style=False, ties="ignore"))
        assert half["method"]["tie_model"] == "half" and "tie_parameter" not in half["method"]
        assert half["method"]["ties"] == "half a win each (tie and both bad)"
        assert davidson["method"]["tie_model"] == "davidson"
        assert davidson["method"]["tie_parameter"] == pytest.approx(0.7, rel=0.15)
        assert ignored["method"]["tie_model"] == "ignore"
        # all three order the contenders the same here; the ratings differ
        order = [[r["contender"] for r in s["leaderboard"]] for s in (half, davidson, ignored)]
        assert order[0] == order[1] == order[2] == ["z", "y", "x"]
        assert half["leaderboard"][0]["rating"] != davidson["leaderboard"][0]["rating"]
        # the category boards follow the tie model too
        for snap in (davidson, ignored):
            for row in snap["leaderboard"]:
                assert row["ci_low"] < row["rating"] < row["ci_high"]
        assert davidson["categories"][0]["leaderboard"]

    def test_an_unknown_tie_model_is_refused_in_words(self):
        with pytest.raises(ValueError, match="unknown tie model 'coin'"):
            RankOptions(ties="coin")


class TestRankCommand:
    def test_ties_flag_reaches_the_snapshot(self, tmp_path, monkeypatch):
        from arena.cli import main as arena_main

        rows = [
            {"question_id": str(i), "model_a": "x", "model_b": "y", "winner": w, "tstamp": float(i)}
            for i, w in enumerate(["model_a", "model_b", "tie", "model_a", "tie (bothbad)", "model_a"] * 5)
        ]
        path = tmp_path / "votes.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        out = tmp_path / "snap.json"
        monkeypatch.setenv("ARENA_CONFIG", "/nonexistent/arena.toml")
        monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path))
        assert (
            arena_main(["rank", "--input", str(path), "--output", str(out), "--ties", "davidson", "--ci", "sandwich"])
            == 0
        )
        snap = json.loads(out.read_text())
        assert snap["method"]["tie_model"] == "davidson" and snap["leaderboard"][0]["contender"] == "x"
