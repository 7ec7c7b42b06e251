"""Tie models beside the half-win default.

* `half` (the default, in bt.py): a tie or both-bad vote is half a win for
  each side.
* `davidson` (Davidson 1970): a tie is its own outcome,
  P(a) = e^{d/2} / Z, P(b) = e^{-d/2} / Z, P(tie) = nu / Z with
  Z = e^{d/2} + e^{-d/2} + nu and d = theta_a - theta_b. Among decisive votes
  P(a beats b) is still the logistic of d, so strengths and rating points mean
  what they mean in Bradley-Terry; nu says how often evenly matched
  contenders tie (P(tie | d = 0) = nu / (2 + nu)).
* `ignore` (draws-ignored, Tang et al. 2025): ties and both-bad votes leave
  the fit; Bradley-Terry on the decisive votes only.

The Davidson likelihood is an exponential family in (d/2, log nu), so the
negative log-likelihood is convex and its Hessian is the covariance of the
outcome's statistics: Newton's method with the exact Hessian on per-pair sums,
as in bt.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from arena.ratings import bt
from arena.ratings.bt import FloatArray, IntArray, Matchups
from arena.ratings.options import TIE_MODELS as TIE_MODELS

DESCRIPTIONS = {
    "half": "half a win each (tie and both bad)",
    "davidson": "Davidson: a tie (or both bad) is its own outcome with parameter nu",
    "ignore": "ignored: ties and both-bad votes leave the fit (decisive votes only)",
}


def drop_ties(m: Matchups) -> Matchups:
    """The decisive rows only (draws-ignored)."""
    keep = m.outcome != 0.5
    return Matchups(m.n, m.a[keep], m.b[keep], m.outcome[keep], m.count[keep])


@dataclass(frozen=True)
class DavidsonFit:
    """Strengths (natural units, sum zero) and log nu."""

    theta: FloatArray
    log_nu: float
    iterations: int
    gradient_norm: float
    regularized: bool

    @property
    def nu(self) -> float:
        return math.exp(self.log_nu)


def fit_davidson(
    m: Matchups,
    *,
    init: DavidsonFit | None = None,
    ridge: float | None = None,
    max_iterations: int = 100,
) -> DavidsonFit:
    """Maximum-likelihood Davidson strengths and tie parameter.

    The MLE of the strengths exists under the same condition as for half wins
    (a tie binds both ways, as half a win does); otherwise the weak prior of
    bt.py keeps them finite. With no ties at all nu's MLE is 0: log nu then
    gets the same weak prior, which leaves it very negative and the strengths
    those of Bradley-Terry on the decisive votes.
    """
    sums = _PairOutcomes.of(m)
    if ridge is None:
        ridge = 0.0 if bt.mle_exists(m) else bt.SEPARATION_RIDGE
    nu_ridge = 0.0 if 0 < sums.ties.sum() < sums.battles.sum() else bt.SEPARATION_RIDGE
    return _newton(sums, init, ridge, nu_ridge, max_iterations)


def probabilities(
    theta: FloatArray, log_nu: float, a: IntArray, b: IntArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """P(a wins), P(b wins), P(tie) for each (a, b)."""
    half = 0.5 * (theta[a] - theta[b])
    # divide through by the largest term for stability
    top = np.maximum(np.abs(half), log_nu)
    ea, eb, et = np.exp(half - top), np.exp(-half - top), np.exp(log_nu - top)
    z = ea + eb + et
    return ea / z, eb / z, et / z


def bootstrap_davidson(
    m: Matchups,
    full: DavidsonFit,
    rounds: int,
    rng: np.random.Generator,
    *,
    progress: Callable[[int], None] | None = None,
) -> FloatArray:
    """Strengths on `rounds` multinomial resamples of the battles, (rounds, n)."""
    total = round(m.total)
    share = m.count / m.count.sum()
    out = np.empty((rounds, m.n))
    for i in range(rounds):
        counts = rng.multinomial(total, share).astype(np.float64)
        resampled = Matchups(m.n, m.a, m.b, m.outcome, counts)
        sums = _PairOutcomes.of(resampled)
        ridge = 0.0 if (not full.regularized and bt.mle_exists(resampled)) else bt.SEPARATION_RIDGE
        nu_ridge = 0.0 if 0 < sums.ties.sum() < sums.battles.sum() else bt.SEPARATION_RIDGE
        out[i] = _newton(sums, full, ridge, nu_ridge, 100).theta
        if progress is not None:
            progress(1)
    return out


def sandwich_davidson(m: Matchups, fit: DavidsonFit, reference: int | None = None) -> FloatArray:
    """Robust covariance H^-1 J H^-1 of the strengths (n x n): sum-zero, or with
    contender `reference` held fixed."""
    n = m.n
    sums = _PairOutcomes.of(m)
    hess = _hessian(sums, fit.theta, fit.log_nu, 0.0, 0.0)
    if fit.regularized:
        hess[:n, :n] += bt.SEPARATION_RIDGE * np.eye(n)
    pa, pb, pt = probabilities(fit.theta, fit.log_nu, m.a, m.b)
    s = np.where(m.outcome == 1.0, 1.0, np.where(m.outcome == 0.0, -1.0, 0.0))
    t = (m.outcome == 0.5).astype(np.float64)
    score_u = 0.5 * s - 0.5 * (pa - pb)
    score_l = t - pt
    grad = np.zeros((m.a.size, n + 1))
    rows = np.arange(m.a.size)
    grad[rows, m.a] += score_u
    grad[rows, m.b] -= score_u
    grad[:, n] = score_l
    meat = grad.T @ (grad * m.count[:, None])
    ref = 0 if reference is None else reference
    keep = np.r_[np.arange(n) != ref, True]
    bread = np.linalg.pinv(hess[np.ix_(keep, keep)])
    reduced = (bread @ meat[np.ix_(keep, keep)] @ bread)[: n - 1, : n - 1]
    embed = np.zeros((n, n - 1))
    embed[np.arange(n) != ref, :] = np.eye(n - 1)
    if reference is None:
        embed -= embed.mean(axis=0, keepdims=True)
    return np.asarray(embed @ reduced @ embed.T, dtype=np.float64)


def log_likelihood(theta: FloatArray, log_nu: float, m: Matchups) -> float:
    """Davidson log-likelihood of the rows of `m` (ties and both-bad as ties)."""
    pa, pb, pt = probabilities(theta, log_nu, m.a, m.b)
    p = np.where(m.outcome == 1.0, pa, np.where(m.outcome == 0.0, pb, pt))
    return float(m.count @ np.log(p))


# -- helpers -----------------------------------------------------------------


@dataclass(frozen=True)
class _PairOutcomes:
    """Per ordered pair: battles N, wins of a, wins of b, ties."""

    n: int
    a: IntArray
    b: IntArray
    battles: FloatArray
    wins_a: FloatArray
    wins_b: FloatArray
    ties: FloatArray

    @classmethod
    def of(cls, m: Matchups) -> _PairOutcomes:
        key = m.a * m.n + m.b
        size = m.n * m.n

        def per_pair(weight: FloatArray) -> FloatArray:
            return np.bincount(key, weights=weight, minlength=size).astype(np.float64)

        battles = per_pair(m.count)
        wins_a = per_pair(m.count * (m.outcome == 1.0))
        wins_b = per_pair(m.count * (m.outcome == 0.0))
        (used,) = np.nonzero(battles)
        ties = battles[used] - wins_a[used] - wins_b[used]
        return cls(m.n, used // m.n, used % m.n, battles[used], wins_a[used], wins_b[used], ties)

    def loss(self, theta: FloatArray, log_nu: float, ridge: float, nu_ridge: float) -> float:
        half = 0.5 * (theta[self.a] - theta[self.b])
        log_z = np.logaddexp(np.logaddexp(half, -half), log_nu)
        ll = self.wins_a * half - self.wins_b * half + self.ties * log_nu - self.battles * log_z
        return float(-ll.sum() + 0.5 * ridge * theta @ theta + 0.5 * nu_ridge * log_nu**2)


def _gradient(s: _PairOutcomes, theta: FloatArray, log_nu: float, ridge: float, nu_ridge: float) -> FloatArray:
    """Gradient of the negative log-likelihood in (theta, log nu)."""
    pa, pb, pt = probabilities(theta, log_nu, s.a, s.b)
    g_u = s.battles * 0.5 * (pa - pb) - 0.5 * (s.wins_a - s.wins_b)
    g = np.empty(s.n + 1)
    g[: s.n] = np.bincount(s.a, g_u, s.n) - np.bincount(s.b, g_u, s.n) + ridge * theta
    g[s.n] = float((s.battles * pt - s.ties).sum()) + nu_ridge * log_nu
    return g


def _hessian(s: _PairOutcomes, theta: FloatArray, log_nu: float, ridge: float, nu_ridge: float) -> FloatArray:
    """The covariance of (s/2, t) per battle, summed: the exact Hessian."""
    n = s.n
    pa, pb, pt = probabilities(theta, log_nu, s.a, s.b)
    h_uu = s.battles * ((pa + pb) / 4 - (pa - pb) ** 2 / 4)
    h_ul = -s.battles * 0.5 * (pa - pb) * pt
    h = np.zeros((n + 1, n + 1))
    h[:n, :n] = bt._laplacian(s.a, s.b, h_uu, n)
    cross = np.bincount(s.a, h_ul, n) - np.bincount(s.b, h_ul, n)
    h[:n, n] = h[n, :n] = cross
    h[n, n] = float((s.battles * pt * (1 - pt)).sum()) + nu_ridge
    if ridge:
        h[:n, :n] += ridge * np.eye(n)
    return h


def _newton(
    s: _PairOutcomes, init: DavidsonFit | None, ridge: float, nu_ridge: float, max_iterations: int
) -> DavidsonFit:
    """Damped Newton (halve the step until the loss does not rise)."""
    n = s.n
    if init is None:
        theta = np.zeros(n)
        tie_share = float(s.ties.sum() / max(s.battles.sum(), 1.0))
        # at d = 0, P(tie) = nu / (2 + nu): start from the observed tie share
        log_nu = math.log(max(2 * tie_share / max(1 - tie_share, 1e-9), 1e-6))
    else:
        theta, log_nu = np.array(init.theta, dtype=np.float64), init.log_nu
    theta -= theta.mean()
    keep = np.ones(n + 1, dtype=bool)
    if not ridge:
        keep[0] = False  # theta is defined up to a constant: hold theta[0], then re-centre
    loss = s.loss(theta, log_nu, ridge, nu_ridge)
    iteration = 0
    for iteration in range(1, max_iterations + 1):  # noqa: B007 - reported after the loop
        grad = _gradient(s, theta, log_nu, ridge, nu_ridge)
        hess = _hessian(s, theta, log_nu, ridge, nu_ridge)
        step = np.zeros(n + 1)
        step[keep] = -np.linalg.solve(hess[np.ix_(keep, keep)], grad[keep])
        size = float(np.abs(step).max(initial=0.0))
        t = 1.0
        while True:
            new_theta, new_log_nu = theta + t * step[:n], log_nu + t * step[n]
            new_loss = s.loss(new_theta, new_log_nu, ridge, nu_ridge)
            if new_loss <= loss + 1e-12 * abs(loss) or t < 1e-6:
                break
            t /= 2
        theta, log_nu, loss = new_theta, new_log_nu, new_loss
        if not ridge:
            theta -= theta.mean()
        if t * size < bt.STEP_TOLERANCE:
            break
    norm = float(np.linalg.norm(_gradient(s, theta, log_nu, ridge, nu_ridge)))
    return DavidsonFit(theta, float(log_nu), iteration, norm, ridge > 0)
