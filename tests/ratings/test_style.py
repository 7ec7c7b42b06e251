"""Style features of an answer, and the style-adjusted fit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from arena.ratings import bt
from arena.ratings.style import (
    StyleProblem,
    standardize,
    style_differences,
)
from tests.ratings.simulate import simulate


def style_data(seed: int, votes: int, effect: np.ndarray, strengths: np.ndarray):
    rng = np.random.default_rng(seed)
    a, b, y, fa, fb = simulate(strengths, votes, rng, style_effect=effect)
    z, _, _ = standardize(style_differences(fa, fb))
    return a, b, y, z


class TestStyleFit:
    def test_differences_and_z_scores(self):
        diff = style_differences(np.array([[3.0, 0.0]]), np.array([[1.0, 0.0]]))
        assert diff.tolist() == [[0.4, 0.0]]  # (3 - 1) / (3 + 1 + 1)
        z, _, std = standardize(np.array([[1.0, 0.0], [3.0, 0.0]]))
        assert z.tolist() == [[-1.0, 0.0], [1.0, 0.0]] and std.tolist() == [1.0, 0.0]

    effect = np.array([0.5, 0.1, -0.15, -0.1, 0.06, 0.12])
    strengths = np.array([-0.5, 0.0, 0.4, 0.8])

    def test_recovers_a_known_style_effect(self):
        a, b, y, z = style_data(1, 60_000, self.effect, self.strengths)
        fit = StyleProblem(a, b, y, z, 4).fit()
        assert np.abs(fit.beta - self.effect).max() < 0.04
        assert np.abs(bt.to_ratings(fit.theta) - bt.to_ratings(self.strengths)).max() < 15
        assert fit.gradient_norm < 1e-6

    def test_matches_a_plain_logistic_regression_of_the_joint_model(self):
        a, b, y, z = style_data(2, 3000, self.effect, self.strengths)
        fit = StyleProblem(a, b, y, z, 4).fit()
        x = np.zeros((y.size, 4 + z.shape[1]))
        x[np.arange(y.size), a] = 1
        x[np.arange(y.size), b] = -1
        x[:, 4:] = z
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lr = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=500)
            lr.fit(x, y)
        assert np.abs(bt.to_ratings(lr.coef_[0][:4]) - bt.to_ratings(fit.theta)).max() < 0.01
        assert np.abs(lr.coef_[0][4:] - fit.beta).max() < 1e-5

    def test_one_step_bootstrap_tracks_the_exact_refits(self):
        a, b, y, z = style_data(3, 20_000, self.effect, self.strengths)
        problem = StyleProblem(a, b, y, z, 4)
        full = problem.fit()
        exact_t, exact_b, how_exact = problem.bootstrap(full, 30, seed=9, exact=True)
        quick_t, quick_b, how_quick = problem.bootstrap(full, 30, seed=9, exact=False)
        assert how_exact != how_quick
        spread = (exact_t.std(axis=0) * bt.POINTS_PER_UNIT).max()
        # the same resamples: the one-step answer sits within a few % of the round's spread
        assert np.abs(exact_t - quick_t).max() * bt.POINTS_PER_UNIT < 0.1 * spread
        assert np.abs(exact_b - quick_b).max() < 0.1 * exact_b.std(axis=0).max()

    def test_bootstrap_is_reproducible(self):
        a, b, y, z = style_data(4, 2000, self.effect, self.strengths)
        problem = StyleProblem(a, b, y, z, 4)
        full = problem.fit()
        first = problem.bootstrap(full, 5, seed=1)
        second = problem.bootstrap(full, 5, seed=1)
        assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


class TestStyleIntervals:
    def test_95_percent_intervals_of_the_style_effect_cover_the_truth(self):
        effect = np.array([0.5, 0.1, -0.15, -0.1, 0.06, 0.12])
        strengths = np.array([-0.4, 0.0, 0.3, 0.6])
        covered = trials = 0
        for seed in range(120):
            a, b, y, z = style_data(500 + seed, 1500, effect, strengths)
            problem = StyleProblem(a, b, y, z, 4)
            fit = problem.fit()
            half = 1.96 * np.sqrt(np.diag(problem.sandwich(fit))[4:])
            covered += int(((fit.beta - half <= effect) & (effect <= fit.beta + half)).sum())
            trials += effect.size
        assert 0.90 <= covered / trials <= 0.99

    def test_sandwich_and_bootstrap_agree_on_width(self):
        a, b, y, z = style_data(6, 8000, np.array([0.5, 0.1, -0.15, -0.1, 0.06, 0.12]), np.array([-0.4, 0.0, 0.3, 0.6]))
        problem = StyleProblem(a, b, y, z, 4)
        fit = problem.fit()
        sandwich = 1.96 * np.sqrt(np.diag(problem.sandwich(fit))[4:])
        _, betas, _ = problem.bootstrap(fit, 150, seed=2)
        low, high = np.percentile(betas, [2.5, 97.5], axis=0)
        assert (high - low) / 2 == pytest.approx(sandwich, rel=0.3)


class TestLargeProblems:
    """Above QUADRATIC_LIMIT battles the style products are formed block by
    block; every fit, interval and bootstrap must come out bit for bit the same."""

    def test_block_products_give_the_stored_products_results(self, monkeypatch):
        a, b, y, z = style_data(9, 20_000, np.array([0.5, 0.1, -0.15, -0.1, 0.06, 0.12]), np.linspace(-0.5, 0.5, 7))
        stored = StyleProblem(a, b, y, z, 7)
        monkeypatch.setattr(StyleProblem, "QUADRATIC_LIMIT", 0)
        monkeypatch.setattr(StyleProblem, "QUADRATIC_BLOCK", 1000)  # blocks of a few pairs, cut between pairs
        blocked = StyleProblem(a, b, y, z, 7)
        assert stored.quadratic is not None and blocked.quadratic is None and len(blocked._pair_blocks) > 10
        fits = [p.fit() for p in (stored, blocked)]
        assert np.array_equal(fits[0].theta, fits[1].theta) and np.array_equal(fits[0].beta, fits[1].beta)
        assert np.array_equal(stored.sandwich(fits[0]), blocked.sandwich(fits[1]))
        boots = [p.bootstrap(f, 20, seed=3, exact=False) for p, f in zip((stored, blocked), fits, strict=True)]
        assert np.array_equal(boots[0][0], boots[1][0]) and np.array_equal(boots[0][1], boots[1][1])

    def test_the_stable_order_of_small_keys_is_numpys(self):
        from arena.ratings.style import _stable_order

        key = np.random.default_rng(4).integers(0, 300, 50_000)
        assert np.array_equal(_stable_order(key, 300), np.argsort(key, kind="stable"))
        assert np.array_equal(_stable_order(key * 1000, 300_000), np.argsort(key * 1000, kind="stable"))
