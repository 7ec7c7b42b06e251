"""What GATE adds to a model, and what the left side adds to an answer.

A sibling of the plain fit, an "extended" Bradley-Terry with additive terms
(as LMArena's agent arena does for subsystems):

    logit P(a beats b) = beta[base(a)] + gamma[base(a)] * gate(a)
                       - beta[base(b)] - gamma[base(b)] * gate(b) + delta

`base(X+gate)` is `X` when `X` also played (pools where the base model and
its GATE variant both play); a GATE contender without its base is its own
base. gamma[X] is GATE's uplift for base model X, delta the advantage of side
A (the left column). Ties and both-bad votes are half wins, as in the default
fit. Intervals are sandwich (robust) intervals: gamma and delta are contrasts,
free of the anchor and of the sum-zero convention.

With one gamma per base model, gamma[X] is the rating gap of `X+gate` over
`X` with position taken out; what the fit adds is the interval of that gap
(which borrows from every battle either of them played) and delta.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit, ndtri

from arena.ratings.bt import (
    POINTS_PER_UNIT,
    SEPARATION_RIDGE,
    STEP_TOLERANCE,
    FloatArray,
    IntArray,
    Matchups,
    PairSums,
)
from arena.ratings.bt import mle_exists as _mle_exists

GATE_SUFFIX = "+gate"


@dataclass(frozen=True)
class Design:
    """Parameters: one beta per base, one gamma per paired base, then delta."""

    bases: list[str]
    base_of: IntArray  # contender index -> base index
    gamma_of: IntArray  # contender index -> gamma index, -1 when not a GATE variant of a played base
    paired: list[tuple[str, str]]  # (base, GATE contender) per gamma

    @property
    def size(self) -> int:
        return len(self.bases) + len(self.paired) + 1

    def rows(self, a: IntArray, b: IntArray) -> FloatArray:
        """The design row of each battle (a, b)."""
        m, k = len(self.bases), len(self.paired)
        x = np.zeros((a.size, m + k + 1))
        rows = np.arange(a.size)
        x[rows, self.base_of[a]] += 1.0
        x[rows, self.base_of[b]] -= 1.0
        for side, sign in ((a, 1.0), (b, -1.0)):
            g = self.gamma_of[side]
            has = g >= 0
            x[rows[has], m + g[has]] += sign
        x[:, -1] = 1.0
        return x


def design_for(names: list[str], gate: dict[str, bool]) -> Design:
    """Pair each GATE contender `X+gate` with `X` when `X` is among `names`."""
    played = set(names)
    bases: list[str] = []
    index: dict[str, int] = {}
    paired: list[tuple[str, str]] = []
    base_of = np.empty(len(names), dtype=np.int64)
    gamma_of = np.full(len(names), -1, dtype=np.int64)

    def base_index(name: str) -> int:
        if name not in index:
            index[name] = len(bases)
            bases.append(name)
        return index[name]

    for i, name in enumerate(names):
        base = name.removesuffix(GATE_SUFFIX)
        if gate.get(name, False) and name.endswith(GATE_SUFFIX) and base in played:
            base_of[i] = base_index(base)
            gamma_of[i] = len(paired)
            paired.append((base, name))
        else:
            base_of[i] = base_index(name)
    return Design(bases, base_of, gamma_of, paired)


@dataclass(frozen=True)
class ExtendedFit:
    params: FloatArray
    covariance: FloatArray  # sandwich, over (gamma..., delta); contrasts only
    design: Design
    regularized: bool


def fit_extended(m: Matchups, design: Design) -> ExtendedFit:
    """Newton's method on per-pair sums; sandwich covariance of gamma and delta
    (its middle needs the outcome rows)."""
    pairs = PairSums.of(m)
    x = design.rows(pairs.a, pairs.b)
    w, s = pairs.battles, pairs.score
    p_count = design.size
    # one beta is held at zero (the ratings' constant is not identified)
    keep = np.r_[False, np.ones(p_count - 1, dtype=bool)]
    regularized = not _mle_exists(m)
    ridge = np.zeros(p_count)
    if regularized:
        ridge[: len(design.bases)] = SEPARATION_RIDGE
    params = np.zeros(p_count)
    loss = _loss(x, s, w, params, ridge)
    for _ in range(100):
        p = expit(x @ params)
        grad = x.T @ (w * p - s) + ridge * params
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(ridge)
        step = np.zeros(p_count)
        step[keep] = -np.linalg.lstsq(hess[np.ix_(keep, keep)], grad[keep], rcond=None)[0]
        t = 1.0
        while True:
            new_loss = _loss(x, s, w, params + t * step, ridge)
            if new_loss <= loss + 1e-12 * abs(loss) or t < 1e-6:
                break
            t /= 2
        params, loss = params + t * step, new_loss
        if t * float(np.abs(step).max(initial=0.0)) < STEP_TOLERANCE:
            break
    p = expit(x @ params)
    hess = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(ridge)
    rows = design.rows(m.a, m.b)
    meat = (rows * (m.count * (expit(rows @ params) - m.outcome) ** 2)[:, None]).T @ rows
    bread = np.linalg.pinv(hess[np.ix_(keep, keep)])
    cov = np.zeros((p_count, p_count))
    cov[np.ix_(keep, keep)] = bread @ meat[np.ix_(keep, keep)] @ bread
    tail = slice(len(design.bases), p_count)
    return ExtendedFit(params, cov[tail, tail], design, regularized)


def sections(m: Matchups, names: list[str], gate: dict[str, bool], level: float = 0.95) -> dict[str, Any]:
    """The snapshot's `gate_uplift` (per base model) and `position` sections."""
    design = design_for(names, gate)
    fit = fit_extended(m, design)
    z = float(ndtri(0.5 + level / 2))
    sd = np.sqrt(np.clip(np.diag(fit.covariance), 0, None))
    k = len(design.paired)
    estimates = fit.params[len(design.bases) :] * POINTS_PER_UNIT
    half = z * sd * POINTS_PER_UNIT
    uplift: dict[str, Any] = {}
    for g, (base, contender) in enumerate(design.paired):
        ci, cj = names.index(base), names.index(contender)
        between = (m.a == ci) & (m.b == cj) | (m.a == cj) & (m.b == ci)
        uplift[base] = {
            "contender": contender,
            "points": round(float(estimates[g]), 2),
            "ci_low": round(float(estimates[g] - half[g]), 2),
            "ci_high": round(float(estimates[g] + half[g]), 2),
            "head_to_head": round(float(m.count[between].sum())),
        }
    a_score = float((m.count * m.outcome).sum() / m.total)
    position = {
        "side": "a",
        "meaning": "rating points side A (the left answer) gains over side B, with contender strengths held out",
        "points": round(float(estimates[k]), 2),
        "ci_low": round(float(estimates[k] - half[k]), 2),
        "ci_high": round(float(estimates[k] + half[k]), 2),
        "a_score": round(a_score, 4),
        "votes": round(m.total),
    }
    return {
        "gate_uplift": uplift,
        "position": position,
        "extended_fit": {"ci": "sandwich", "level": level, "ties": "half a win each", "regularized": fit.regularized},
    }


def _loss(x: FloatArray, s: FloatArray, w: FloatArray, params: FloatArray, ridge: FloatArray) -> float:
    d = x @ params
    nll = s * np.logaddexp(0, -d) + (w - s) * np.logaddexp(0, d)
    return float(nll.sum() + 0.5 * ridge @ params**2)
