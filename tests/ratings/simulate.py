"""Simulated votes with known truth, shared by the ratings tests."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from arena.ratings.style import standardize, style_differences

FEATURE_MEANS = np.array([300.0, 4.0, 2.0, 3.0, 0.5, 1.0])  # FEATURES order


def simulate(
    strengths: np.ndarray,
    votes: int,
    rng: np.random.Generator,
    *,
    style_effect: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, outcome, features_a, features_b) from a Bradley-Terry model with
    natural-unit `strengths` and, optionally, a style effect on the z-scored
    feature differences."""
    n = strengths.size
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    features_a = rng.poisson(FEATURE_MEANS, (votes, FEATURE_MEANS.size)).astype(float)
    features_b = rng.poisson(FEATURE_MEANS, (votes, FEATURE_MEANS.size)).astype(float)
    margin = strengths[a] - strengths[b]
    if style_effect is not None:
        z, _, _ = standardize(style_differences(features_a, features_b))
        margin = margin + z @ style_effect
    outcome = (rng.random(votes) < expit(margin)).astype(float)
    return a, b, outcome, features_a, features_b
