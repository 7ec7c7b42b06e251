"""Bradley-Terry: worked examples, exactness against logistic regression,
recovery of known strengths and coverage of the intervals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from arena.ratings import bt
from tests.ratings.simulate import simulate


def matchups(rows: list[tuple[int, int, float]], n: int) -> bt.Matchups:
    a, b, y = (np.array(col) for col in zip(*rows, strict=True))
    return bt.aggregate(a, b, y, n)


class TestAggregate:
    def test_collapses_identical_votes_into_counts(self):
        m = matchups([(0, 1, 1.0), (0, 1, 1.0), (1, 0, 0.5), (0, 1, 0.0)], 2)
        rows = sorted(zip(m.a.tolist(), m.b.tolist(), m.outcome.tolist(), m.count.tolist(), strict=True))
        assert rows == [(0, 1, 0.0, 1.0), (0, 1, 1.0, 2.0), (1, 0, 0.5, 1.0)]
        assert m.total == 4

    def test_rejects_an_outcome_that_is_not_win_tie_or_loss(self):
        with pytest.raises(ValueError, match="outcomes must be"):
            bt.aggregate(np.array([0]), np.array([1]), np.array([2.0]), 2)


class TestFitBt:
    def test_two_contenders_three_wins_to_one(self):
        # P(A beats B) = 3/4 at the MLE, so R_A - R_B = 400 log10(3) = 190.85
        fit = bt.fit_bt(matchups([(0, 1, 1.0)] * 3 + [(0, 1, 0.0)], 2))
        ratings = fit.ratings()
        assert ratings[0] - ratings[1] == pytest.approx(400 * math.log10(3), abs=1e-6)
        assert ratings.mean() == pytest.approx(1000.0)
        assert not fit.regularized and fit.gradient_norm < 1e-9

    def test_ties_and_both_bad_are_half_a_win(self):
        # a win each plus a tie and a both-bad: dead even
        even = bt.fit_bt(matchups([(0, 1, 1.0), (0, 1, 0.0), (0, 1, 0.5), (1, 0, 0.5)], 2)).ratings()
        assert even == pytest.approx([1000.0, 1000.0])
        lean = bt.fit_bt(matchups([(0, 1, 1.0), (0, 1, 0.5), (0, 1, 0.5)], 2)).ratings()
        # A scores 2 of 3 points: P = 2/3, difference 400 log10(2)
        assert lean[0] - lean[1] == pytest.approx(400 * math.log10(2), abs=1e-6)

    def test_anchor_is_held_at_its_rating(self):
        fit = bt.fit_bt(matchups([(0, 1, 1.0)] * 3 + [(0, 1, 0.0), (1, 2, 1.0), (2, 1, 1.0), (2, 0, 0.0)], 3))
        anchored = fit.ratings(anchor=1, anchor_rating=1000.0)
        centred = fit.ratings()
        assert anchored[1] == pytest.approx(1000.0)
        assert anchored - anchored[1] == pytest.approx(centred - centred[1])

    def test_agrees_with_plain_logistic_regression_within_a_hundredth_of_a_point(self):
        rng = np.random.default_rng(3)
        a, b, y, _, _ = simulate(rng.normal(0, 1, 8), 4000, rng)
        y[rng.random(y.size) < 0.15] = 0.5
        m = bt.aggregate(a, b, y, 8)
        ours = bt.fit_bt(m).ratings()
        rows = m.a.size
        x = np.zeros((2 * rows, 8))
        x[np.arange(rows), m.a] = 1
        x[np.arange(rows), m.b] = -1
        x[rows:] = x[:rows]
        target = np.r_[np.ones(rows), np.zeros(rows)]
        weight = np.r_[m.count * m.outcome, m.count * (1 - m.outcome)]
        keep = weight > 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lr = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=500)
            lr.fit(x[keep], target[keep], sample_weight=weight[keep])
        assert np.abs(bt.to_ratings(lr.coef_[0]) - ours).max() < 0.01

    def test_unbeaten_contender_gets_a_finite_rating_and_a_flag(self):
        fit = bt.fit_bt(matchups([(0, 1, 1.0)] * 3 + [(1, 2, 1.0), (2, 1, 1.0)], 3))
        assert fit.regularized
        ratings = fit.ratings()
        assert np.isfinite(ratings).all() and ratings[0] > ratings[1]

    def test_recovers_known_strengths(self):
        rng = np.random.default_rng(11)
        truth = np.array([-1.0, -0.4, 0.0, 0.3, 1.1])
        a, b, y, _, _ = simulate(truth, 40_000, rng)
        ratings = bt.fit_bt(bt.aggregate(a, b, y, 5)).ratings()
        # ~16k votes each: the standard error is about 3 points
        assert np.abs(ratings - bt.to_ratings(truth)).max() < 12


class TestIntervals:
    def test_bootstrap_is_reproducible_with_a_seed(self):
        rng = np.random.default_rng(5)
        a, b, y, _, _ = simulate(np.array([0.0, 0.5, 1.0]), 600, rng)
        m = bt.aggregate(a, b, y, 3)
        full = bt.fit_bt(m)
        first = bt.bootstrap_bt(m, full, 20, np.random.default_rng(42))
        second = bt.bootstrap_bt(m, full, 20, np.random.default_rng(42))
        other = bt.bootstrap_bt(m, full, 20, np.random.default_rng(43))
        assert np.array_equal(first, second)
        assert not np.array_equal(first, other)

    def test_sandwich_and_bootstrap_agree_on_width(self):
        rng = np.random.default_rng(8)
        a, b, y, _, _ = simulate(np.array([-0.5, 0.0, 0.2, 0.9]), 5000, rng)
        m = bt.aggregate(a, b, y, 4)
        full = bt.fit_bt(m)
        sandwich = 1.96 * bt.POINTS_PER_UNIT * np.sqrt(np.diag(bt.sandwich_covariance(m, full)))
        samples = np.stack([bt.to_ratings(t) for t in bt.bootstrap_bt(m, full, 200, np.random.default_rng(1))])
        low, high = np.percentile(samples, [2.5, 97.5], axis=0)
        assert (high - low) / 2 == pytest.approx(sandwich, rel=0.25)

    @pytest.mark.parametrize("method", ["sandwich", "bootstrap"])
    def test_95_percent_intervals_cover_the_truth_about_95_percent_of_the_time(self, method):
        truth = np.array([-0.6, -0.2, 0.0, 0.3, 0.5])
        expected = bt.to_ratings(truth)
        covered = trials = 0
        simulations = 150 if method == "sandwich" else 60
        for seed in range(simulations):
            rng = np.random.default_rng(1000 + seed)
            a, b, y, _, _ = simulate(truth, 800, rng)
            m = bt.aggregate(a, b, y, 5)
            full = bt.fit_bt(m)
            ratings = full.ratings()
            if method == "sandwich":
                half = 1.96 * bt.POINTS_PER_UNIT * np.sqrt(np.diag(bt.sandwich_covariance(m, full)))
                low, high = ratings - half, ratings + half
            else:
                samples = np.stack([bt.to_ratings(t) for t in bt.bootstrap_bt(m, full, 100, rng)])
                low, high = np.percentile(samples, [2.5, 97.5], axis=0)
            covered += int(((low <= expected) & (expected <= high)).sum())
            trials += 5
        assert 0.90 <= covered / trials <= 0.99


class TestConnectivity:
    def test_strong_connectivity_agrees_with_scipy_csgraph(self) -> None:
        # bt checks whether the MLE exists with its own search; scipy's strongly
        # connected components (which it used before) are the reference
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        rng = np.random.default_rng(3)
        seen = set()
        for _ in range(400):
            n = int(rng.integers(1, 9))
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
            if not pairs:
                continue
            a = np.array([p[0] for p in pairs])
            b = np.array([p[1] for p in pairs])
            count = rng.integers(1, 4, a.size).astype(np.float64)
            # some pairs one-sided (a never lost, or never won), some split
            outcome = rng.choice([0.0, 0.5, 1.0], a.size)
            matchups = bt.Matchups(n, a, b, outcome, count)
            pairs_sums = bt.PairSums.of(matchups)
            played = np.zeros(n, dtype=bool)
            played[a] = played[b] = True
            src = np.r_[pairs_sums.a[pairs_sums.score > 0], pairs_sums.b[pairs_sums.score < pairs_sums.battles]]
            dst = np.r_[pairs_sums.b[pairs_sums.score > 0], pairs_sums.a[pairs_sums.score < pairs_sums.battles]]
            graph = csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
            expected = bool(played.all()) and connected_components(graph, directed=True, connection="strong")[0] == 1
            assert bt.mle_exists(matchups) == expected
            seen.add(expected)
        assert seen == {True, False}
