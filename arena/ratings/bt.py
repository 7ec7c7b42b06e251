"""Bradley-Terry ratings from aggregated votes.

The model: P(a beats b) = 1 / (1 + 10 ** ((R_b - R_a) / 400)). Internally we
work with natural-log strengths theta (R = 400 / ln 10 * theta + 1000), so a
battle is a logistic regression row with +1 for a, -1 for b and no intercept.
Ties and both-bad votes count as half a win for each side (target 0.5).

Because the likelihood depends on the votes only through, per ordered pair,
the number of battles and the summed outcome, every fit here runs on those
pair sums: a million votes among 100 contenders collapse to a few thousand
numbers. Newton's method with the exact Hessian (n x n, n = contenders) then
reaches the maximum-likelihood solution to machine precision in a handful of
steps, and a bootstrap round that starts from the full-data solution needs
two or three.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from arena.ratings.options import BASE as BASE
from arena.ratings.options import INIT_RATING as INIT_RATING
from arena.ratings.options import SCALE as SCALE

# rating points per natural-log unit of strength
POINTS_PER_UNIT = SCALE / math.log(BASE)
# The weak Gaussian prior used only when the maximum-likelihood solution does
# not exist (someone never lost, or the comparison graph is split): a N(0, 10)
# prior on theta, about +-550 rating points per standard deviation.
SEPARATION_RIDGE = 0.1
# Newton stops once no strength moves by more than this (natural units):
# 1e-9 * 174 = 2e-7 rating points.
STEP_TOLERANCE = 1e-9

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Matchups:
    """Votes aggregated to unique (a, b, outcome) rows with counts.

    `outcome` is the score of contender `a`: 1 (a won), 0 (b won), 0.5 (tie
    or both bad). `a` and `b` index into the caller's list of contenders.
    """

    n: int
    a: IntArray
    b: IntArray
    outcome: FloatArray
    count: FloatArray

    @property
    def total(self) -> float:
        return float(self.count.sum())


@dataclass(frozen=True)
class Fit:
    """A fitted strength vector in natural units and how it was obtained."""

    theta: FloatArray
    iterations: int
    gradient_norm: float
    regularized: bool

    def ratings(self, anchor: int | None = None, anchor_rating: float = INIT_RATING) -> FloatArray:
        return to_ratings(self.theta, anchor, anchor_rating)


def aggregate(a: IntArray, b: IntArray, outcome: FloatArray, n: int) -> Matchups:
    """Collapse one row per vote into unique (a, b, outcome) rows with counts."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    code = np.rint(np.asarray(outcome, dtype=np.float64) * 2).astype(np.int64)
    if code.size and (code.min() < 0 or code.max() > 2):
        raise ValueError("outcomes must be 0 (b won), 0.5 (tie) or 1 (a won)")
    key = (a * n + b) * 3 + code
    counts = np.bincount(key, minlength=n * n * 3)
    (rows,) = np.nonzero(counts)
    pair, code_u = np.divmod(rows, 3)
    return Matchups(
        n=n,
        a=pair // n,
        b=pair % n,
        outcome=code_u / 2.0,
        count=counts[rows].astype(np.float64),
    )


def fit_bt(
    matchups: Matchups,
    *,
    init: FloatArray | None = None,
    ridge: float | None = None,
    max_iterations: int = 100,
) -> Fit:
    """Maximum-likelihood Bradley-Terry strengths, centred to sum zero.

    `ridge=None` chooses: exact MLE when it exists, else the weak prior
    SEPARATION_RIDGE (reported as `regularized`).
    """
    pairs = PairSums.of(matchups)
    if ridge is None:
        ridge = 0.0 if _strongly_connected(pairs) else SEPARATION_RIDGE
    return _newton(pairs, init, ridge, max_iterations)


def mle_exists(matchups: Matchups) -> bool:
    """The MLE exists iff every contender can be reached from every other through
    "scored against" edges (a win or a tie): otherwise some group never lost to
    the rest and its ratings run off to infinity."""
    return _strongly_connected(PairSums.of(matchups))


def to_ratings(theta: FloatArray, anchor: int | None = None, anchor_rating: float = INIT_RATING) -> FloatArray:
    """Natural-unit strengths to rating points: mean 1000, or the anchor at its rating."""
    points = POINTS_PER_UNIT * (theta - theta.mean())
    if anchor is None:
        return np.asarray(points + INIT_RATING, dtype=np.float64)
    return np.asarray(points - points[anchor] + anchor_rating, dtype=np.float64)


def bootstrap_bt(
    matchups: Matchups,
    full: Fit,
    rounds: int,
    rng: np.random.Generator,
    *,
    progress: Callable[[int], None] | None = None,
) -> FloatArray:
    """Strengths for `rounds` multinomial resamples of the battles.

    Resampling N battles with replacement is a multinomial draw over the
    aggregated rows, so a round costs one draw over a few thousand rows plus a
    warm-started Newton fit. Returns a (rounds, n) array of natural strengths.
    """
    total = int(round(matchups.total))
    share = matchups.count / matchups.count.sum()
    out = np.empty((rounds, matchups.n))
    for i in range(rounds):
        counts = rng.multinomial(total, share).astype(np.float64)
        pairs = PairSums.of(Matchups(matchups.n, matchups.a, matchups.b, matchups.outcome, counts))
        ridge = 0.0 if (not full.regularized and _strongly_connected(pairs)) else SEPARATION_RIDGE
        out[i] = _newton(pairs, full.theta, ridge, 100).theta
        if progress is not None:
            progress(1)
    return out


def sandwich_covariance(matchups: Matchups, fit: Fit, reference: int | None = None) -> FloatArray:
    """Robust (sandwich) covariance H^-1 J H^-1 of the strengths.

    `reference=None` gives the covariance of the sum-zero strengths; an index
    gives it with that contender held fixed (for an anchored leaderboard).
    J sums each battle's score outer product, so it needs the outcome rows,
    not only the pair sums.
    """
    n = matchups.n
    d = fit.theta[matchups.a] - fit.theta[matchups.b]
    p = expit(d)
    hessian = _laplacian(matchups.a, matchups.b, matchups.count * p * (1 - p), n)
    meat = _laplacian(matchups.a, matchups.b, matchups.count * (p - matchups.outcome) ** 2, n)
    if fit.regularized:
        hessian += SEPARATION_RIDGE * np.eye(n)
    ref = 0 if reference is None else reference
    keep = np.arange(n) != ref
    bread = np.linalg.inv(hessian[np.ix_(keep, keep)])
    reduced = bread @ meat[np.ix_(keep, keep)] @ bread
    embed = np.zeros((n, n - 1))
    embed[keep, :] = np.eye(n - 1)
    if reference is None:
        embed -= embed.mean(axis=0, keepdims=True)
    return embed @ reduced @ embed.T


# -- helpers -----------------------------------------------------------------


@dataclass(frozen=True)
class PairSums:
    """Per ordered pair: battles W and the summed score S of the first side."""

    n: int
    a: IntArray
    b: IntArray
    battles: FloatArray
    score: FloatArray

    @classmethod
    def of(cls, m: Matchups) -> PairSums:
        key = m.a * m.n + m.b
        battles = np.bincount(key, weights=m.count, minlength=m.n * m.n)
        score = np.bincount(key, weights=m.count * m.outcome, minlength=m.n * m.n)
        (used,) = np.nonzero(battles)
        return cls(m.n, used // m.n, used % m.n, battles[used], score[used])  # type: ignore[arg-type]

    def loss(self, theta: FloatArray, ridge: float) -> float:
        d = theta[self.a] - theta[self.b]
        # -[S log s(d) + (W - S) log s(-d)], with log s(x) = -logaddexp(0, -x)
        nll = self.score * np.logaddexp(0, -d) + (self.battles - self.score) * np.logaddexp(0, d)
        return float(nll.sum() + 0.5 * ridge * theta @ theta)


def _newton(pairs: PairSums, init: FloatArray | None, ridge: float, max_iterations: int) -> Fit:
    """Newton's method. From a cold start each step is damped (halved until the
    loss does not rise); from a warm start full steps are taken while they
    shrink, which in the quadratic basin they do, and damping resumes if not."""
    n = pairs.n
    theta = np.zeros(n) if init is None else np.array(init, dtype=np.float64)
    theta -= theta.mean()
    keep = np.arange(1, n)  # theta[0] is held while solving, then re-centred
    damped = init is None
    loss = pairs.loss(theta, ridge) if damped else math.inf
    previous = math.inf
    iteration = 0
    for iteration in range(1, max_iterations + 1):  # noqa: B007 - reported after the loop
        p = expit(theta[pairs.a] - theta[pairs.b])
        grad = _gradient(pairs, theta, ridge)
        hess = _laplacian(pairs.a, pairs.b, pairs.battles * p * (1 - p), n)
        if ridge:
            hess += ridge * np.eye(n)
            step = -np.linalg.solve(hess, grad)
        else:
            step = np.zeros(n)
            step[keep] = -np.linalg.solve(hess[np.ix_(keep, keep)], grad[keep])
        size = float(np.abs(step).max(initial=0.0))
        if not damped and size >= previous:
            damped, loss = True, pairs.loss(theta, ridge)
        t = 1.0
        while damped:
            candidate = theta + t * step
            new_loss = pairs.loss(candidate, ridge)
            if new_loss <= loss + 1e-12 * abs(loss) or t < 1e-6:
                loss = new_loss
                break
            t /= 2
        theta = theta + t * step
        previous = size
        if ridge == 0.0:
            theta -= theta.mean()
        if t * size < STEP_TOLERANCE:
            break
    grad_norm = float(np.linalg.norm(_gradient(pairs, theta, ridge)))
    return Fit(theta=theta, iterations=iteration, gradient_norm=grad_norm, regularized=ridge > 0)


def _gradient(pairs: PairSums, theta: FloatArray, ridge: float) -> FloatArray:
    resid = pairs.battles * expit(theta[pairs.a] - theta[pairs.b]) - pairs.score
    return np.bincount(pairs.a, resid, pairs.n) - np.bincount(pairs.b, resid, pairs.n) + ridge * theta


def _strongly_connected(pairs: PairSums) -> bool:
    n = pairs.n
    played = np.zeros(n, dtype=bool)
    played[pairs.a] = True
    played[pairs.b] = True
    if not played.all():
        return False
    # edge x -> y when x scored against y: a scored if S > 0, b scored if S < W
    a_scored = pairs.score > 0
    b_scored = pairs.score < pairs.battles
    src = np.concatenate([pairs.a[a_scored], pairs.b[b_scored]])
    dst = np.concatenate([pairs.b[a_scored], pairs.a[b_scored]])
    # strongly connected: every contender reached from the first along the edges, and against them
    return n > 0 and _reaches_all(src, dst, n) and _reaches_all(dst, src, n)


def _reaches_all(src: IntArray, dst: IntArray, n: int) -> bool:
    """Whether a search from node 0 along the edges src -> dst reaches all n
    nodes (one vectorised step per level; scipy's csgraph, which did this,
    costs a third of a second to import)."""
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    frontier = seen.copy()
    while frontier.any():
        reached = np.zeros(n, dtype=bool)
        reached[dst[frontier[src]]] = True
        frontier = reached & ~seen
        seen |= reached
    return bool(seen.all())


def _laplacian(a: IntArray, b: IntArray, weight: FloatArray, n: int) -> FloatArray:
    """sum_w (e_a - e_b)(e_a - e_b)^T as a dense n x n matrix."""
    flat = np.bincount(a * n + b, weight, n * n) + np.bincount(b * n + a, weight, n * n)
    off = flat.reshape(n, n)
    lap = -off
    lap[np.diag_indices(n)] += off.sum(axis=1)
    return lap.astype(np.float64, copy=False)
