"""Inverse-propensity weights: ratings that target uniform pair sampling.

Active sampling (and weights, boosts, targets) choose some pairs more often
than others, and each battle stores the probability its pair was drawn with
(`propensity`). Weighting each vote by 1 / propensity, normalised to mean 1
so the total stays the number of votes, makes the fit estimate what uniform
sampling would have (Chatbot Arena's paper, section 5). When the model holds
this changes little; when it does not (say, a contender that is better
against some opponents than others) it keeps the sampler's choices out of
the ratings.
"""

from __future__ import annotations

import numpy as np

from arena.ratings.bt import FloatArray, IntArray, Matchups


def inverse_propensity_weights(propensity: FloatArray | None, size: int) -> tuple[FloatArray | None, str | None]:
    """(weights with mean 1, None) or (None, why the votes cannot be weighted)."""
    if propensity is None or propensity.size != size:
        return None, "the votes carry no sampling propensity: not weighted by it"
    known = np.isfinite(propensity) & (propensity > 0)
    if not known.all():
        missing = int((~known).sum())
        return None, f"{missing} vote(s) have no sampling propensity (older or imported): not weighted by it"
    weights = 1.0 / propensity
    return weights * (size / weights.sum()), None


def aggregate_weighted(a: IntArray, b: IntArray, outcome: FloatArray, n: int, weight: FloatArray) -> Matchups:
    """`bt.aggregate` with each vote counting `weight` instead of 1."""
    code = np.rint(np.asarray(outcome, dtype=np.float64) * 2).astype(np.int64)
    key = (np.asarray(a, dtype=np.int64) * n + np.asarray(b, dtype=np.int64)) * 3 + code
    sums = np.bincount(key, weights=weight, minlength=n * n * 3)
    (rows,) = np.nonzero(sums)
    pair, code_u = np.divmod(rows, 3)
    return Matchups(n=n, a=pair // n, b=pair % n, outcome=code_u / 2.0, count=sums[rows].astype(np.float64))
