"""The style-adjusted Bradley-Terry fit. The counts it reads come from
`arena.answers.style`.

The fit (GeoArena's style control, as in Chatbot Arena): one logistic
regression over contender indicators and the style features of each battle (FEATURES),
each taken as (a - b) / (a + b + 1) and z-scored. The coefficients say how
much a unit (one standard deviation) of each feature moves the vote; the
contender strengths are the ratings with style held equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from scipy.special import expit

from arena.ratings.bt import STEP_TOLERANCE, FloatArray, IntArray


def style_differences(features_a: FloatArray, features_b: FloatArray) -> FloatArray:
    """(a - b) / (a + b + 1) per feature; features are counts, so never negative.
    Computed a block of votes at a time: compact (int32) counts are never
    copied whole as float64."""
    all_a, all_b = np.asarray(features_a), np.asarray(features_b)
    out = np.empty(all_a.shape)
    for s in range(0, len(out), 65_536):
        fa = all_a[s : s + 65_536].astype(np.float64)
        fb = all_b[s : s + 65_536].astype(np.float64)
        np.divide(fa - fb, fa + fb + 1.0, out=out[s : s + 65_536])
    return out


def standardize(
    diff: FloatArray, weight: FloatArray | None = None, *, in_place: bool = False
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """z-score each column (weighted by vote counts); a constant column stays 0.
    `in_place=True` writes the z-scores over `diff` (0.5 GB less at ten million votes)."""
    w = np.ones(diff.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    total = w.sum()
    mean = (w @ diff) / total
    centred = np.subtract(diff, mean, out=diff if in_place else None)
    var = (w @ np.square(centred)) / total
    std = np.sqrt(var)
    safe = np.where(std > 0, std, 1.0)
    z = np.divide(centred, safe, out=centred)
    z[:, std == 0] = 0.0
    return z, mean, std


@dataclass(frozen=True)
class StyleFit:
    """Contender strengths (natural units, sum zero) and style coefficients."""

    theta: FloatArray
    beta: FloatArray
    iterations: int
    gradient_norm: float


class StyleProblem:
    """Battles sorted by contender pair, ready for repeated Newton fits.

    Sorting once turns every per-pair sum into a sparse product with a fixed
    structure: one pass over a million battles is a few vectorised sweeps
    plus two `csr @ dense` products, and the (n + 5)-square Hessian is
    assembled from the per-pair sums.
    """

    # Above this many battle-rounds the style bootstrap takes one exact Newton
    # step per round from the full-data fit (see `bootstrap`).
    EXACT_BOOTSTRAP_LIMIT = 20_000_000
    # Above this many battles the style products z_j z_l are not stored but
    # formed per block of QUADRATIC_BLOCK battles in each Hessian pass.
    QUADRATIC_LIMIT = 4_000_000
    QUADRATIC_BLOCK = 65_536

    def __init__(
        self,
        a: IntArray,
        b: IntArray,
        outcome: FloatArray,
        z: FloatArray,
        n: int,
        weight: FloatArray | None = None,
        ridge: float = 0.0,
    ) -> None:
        key = np.asarray(a, dtype=np.int64) * n + np.asarray(b, dtype=np.int64)
        order = _stable_order(key, n * n)
        self.y = np.asarray(outcome, dtype=np.float64)[order]
        key = key[order]
        size = key.size
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if size else np.zeros(0, np.int64)
        self.pa = key[starts] // n
        self.pb = key[starts] % n
        del key
        self.n = n
        self.k = z.shape[1]
        self.order = order
        self.indptr = np.r_[starts, size].astype(np.int64)
        self.seglen = np.diff(self.indptr)
        self.columns = np.arange(size, dtype=np.int64)
        upper = np.triu_indices(self.k)
        self._upper = upper
        self._products = len(upper[0])
        # [1, z] and [z_j z_l (j <= l)]: sparse products with them give every
        # gradient and Hessian sum. [1, z] is one array, so the gradient's
        # product reads it contiguous (a column slice of one array is copied
        # by scipy on every product), and z is a view of it. Filled in
        # cache-sized blocks of rows: column-wise writes over a million rows
        # cost several times more.
        self.linear = np.empty((size, 1 + self.k))
        z = np.asarray(z, dtype=np.float64)
        for s in range(0, size, 8192):
            self.linear[s : s + 8192, 0] = 1.0
            self.linear[s : s + 8192, 1:] = z[order[s : s + 8192]]
        self.z = self.linear[:, 1:]
        # the products [z_j z_l] are kept while they are small; above
        # QUADRATIC_LIMIT battles (1.7 GB at ten million) each Hessian pass
        # forms them block by block instead (`_quadratic_sums`)
        self.quadratic: FloatArray | None = None
        if size <= self.QUADRATIC_LIMIT:
            self.quadratic = np.empty((size, upper[0].size))
            for s in range(0, size, self.QUADRATIC_BLOCK):
                e = min(s + self.QUADRATIC_BLOCK, size)
                self._quadratic_rows(s, e, self.quadratic[s:e])
        # pair blocks of about QUADRATIC_BLOCK battles each, cut between pairs
        cuts = np.searchsorted(self.indptr, np.arange(self.QUADRATIC_BLOCK, size, self.QUADRATIC_BLOCK))
        self._pair_blocks = list(pairwise(np.unique(np.r_[0, cuts, starts.size]).tolist()))
        self.weight = None if weight is None else np.asarray(weight, dtype=np.float64)[order]
        self.ridge = ridge

    @property
    def size(self) -> int:
        return int(self.y.size)

    @property
    def pairs(self) -> int:
        return int(self.pa.size)

    def fit(
        self,
        init: StyleFit | None = None,
        weight: FloatArray | None = None,
        max_iterations: int = 50,
        *,
        final_gradient: bool = True,
    ) -> StyleFit:
        """Newton's method from `init` (or zero) until no parameter moves more
        than STEP_TOLERANCE; `weight` (in sorted order) overrides the vote counts.
        `final_gradient=False` skips the pass that measures the gradient at the end."""
        w = self.weight if weight is None else weight
        params = np.zeros(self.n + self.k) if init is None else np.r_[init.theta, init.beta]
        # damped (halve until the loss does not rise) from a cold start, or when
        # full steps stop shrinking; in the quadratic basin each loss pass is saved
        damped = init is None
        loss = self._loss(params, w) if damped else math.inf
        previous = math.inf
        iteration = 0
        for iteration in range(1, max_iterations + 1):  # noqa: B007 - reported after the loop
            grad, hess = self._derivatives(params, w)
            step = self._solve(grad, hess)
            size = float(np.abs(step).max(initial=0.0))
            if not damped and size >= previous:
                damped, loss = True, self._loss(params, w)
            t = 1.0
            while damped:
                new_loss = self._loss(params + t * step, w)
                if new_loss <= loss + 1e-12 * abs(loss) or t < 1e-6:
                    loss = new_loss
                    break
                t /= 2
            params = params + t * step
            params[: self.n] -= params[: self.n].mean()
            previous = size
            if t * size < STEP_TOLERANCE:
                break
            if damped and t == 1.0 and size < 0.1:
                damped = False  # close enough: plain Newton from here
        norm = float(np.linalg.norm(self._derivatives(params, w, hessian=False)[0])) if final_gradient else math.nan
        return StyleFit(params[: self.n], params[self.n :], iteration, norm)

    def bootstrap(
        self,
        full: StyleFit,
        rounds: int,
        seed: int,
        *,
        exact: bool | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> tuple[FloatArray, FloatArray, str]:
        """Strengths and coefficients on `rounds` multinomial resamples of the battles.

        `exact=True` refits every round to convergence, warm-started from the
        full-data solution. `exact=False` takes one exact Newton step per
        round from it (the one-step bootstrap: its error is quadratic in the
        round's deviation, far below the Monte Carlo error of 100 rounds),
        computed for all rounds at once with BLAS. `None` picks exact while
        battles x rounds <= EXACT_BOOTSTRAP_LIMIT. Returns (thetas, betas, method).
        """
        if exact is None:
            exact = self.size * rounds <= self.EXACT_BOOTSTRAP_LIMIT
        children = np.random.SeedSequence(seed).spawn(rounds)
        if not exact:
            thetas, betas = self._one_step_bootstrap(full, children, progress)
            return thetas, betas, "one Newton step per round from the full-data fit"
        thetas = np.empty((rounds, self.n))
        betas = np.empty((rounds, self.k))
        draws = _ChunkedMultinomial(self.size, self.weight)
        for i in range(rounds):
            w = draws.full(np.random.default_rng(children[i]))
            fit = self.fit(init=full, weight=w, final_gradient=False)
            thetas[i], betas[i] = fit.theta, fit.beta
            if progress is not None:
                progress(1)
        return thetas, betas, "exact refit per round, warm-started"

    def sandwich(self, fit: StyleFit, reference: int | None = None) -> FloatArray:
        """Robust covariance H^-1 J H^-1 of (theta, beta): theta summing to zero,
        or with contender `reference` held fixed (an anchored leaderboard)."""
        n, k = self.n, self.k
        params = np.r_[fit.theta, fit.beta]
        _, hess = self._derivatives(params, self.weight)
        resid2 = (expit(self._margin(params)) - self.y) ** 2
        if self.weight is not None:
            resid2 *= self.weight
        meat = self._hessian(self._per_pair(resid2, hessian=True))
        meat[np.arange(n), np.arange(n)] -= self.ridge
        ref = 0 if reference is None else reference
        keep = np.r_[np.arange(n) != ref, np.ones(k, dtype=bool)]
        bread = np.linalg.pinv(hess[np.ix_(keep, keep)])  # pinv: a feature that never varies has no curvature
        reduced = bread @ meat[np.ix_(keep, keep)] @ bread
        embed = np.zeros((n + k, n + k - 1))
        embed[keep, :] = np.eye(n + k - 1)
        if reference is None:
            embed[:n] -= embed[:n].mean(axis=0, keepdims=True)
        return np.asarray(embed @ reduced @ embed.T, dtype=np.float64)

    # -- passes over the battles ---------------------------------------------

    def _solve(self, grad: FloatArray, hess: FloatArray) -> FloatArray:
        # theta is defined up to a constant: hold theta[0], solve the rest
        keep = np.ones(grad.size, dtype=bool) if self.ridge else np.r_[False, np.ones(grad.size - 1, dtype=bool)]
        step = np.zeros_like(grad)
        step[keep] = -_solve_or_least_squares(hess[np.ix_(keep, keep)], grad[keep])
        return step

    def _margin(self, params: FloatArray) -> FloatArray:
        theta, beta = params[: self.n], params[self.n :]
        d = np.repeat(theta[self.pa] - theta[self.pb], self.seglen)
        d += self.z @ beta
        return d

    def _loss(self, params: FloatArray, w: FloatArray | None) -> float:
        d = self._margin(params)
        # -[y log s(d) + (1 - y) log s(-d)] = log(1 + e^d) - y d
        nll = np.logaddexp(0, d)
        nll -= self.y * d
        total = float(nll.sum() if w is None else nll @ w)
        return total + 0.5 * self.ridge * float(params[: self.n] @ params[: self.n])

    def _per_pair(self, values: FloatArray, hessian: bool = False) -> FloatArray:
        """Per pair: sum over its battles of values_i * [1, z_i] (and, for the
        Hessian, then values_i * [z_j z_l]_i); each column is summed on its own."""
        from scipy.sparse import csr_matrix  # here: a plain file's rank never imports scipy.sparse

        matrix = csr_matrix((values, self.columns, self.indptr), shape=(self.pairs, self.size))
        linear = np.asarray(matrix @ self.linear)
        if not hessian:
            return linear
        if self.quadratic is not None:
            return np.hstack([linear, np.asarray(matrix @ self.quadratic)])
        return np.hstack([linear, self._quadratic_sums(values)])

    def _quadratic_rows(self, s: int, e: int, out: FloatArray) -> None:
        """out = [z_j z_l (j <= l)] of battles s to e, a column at a time (a
        fancy-indexed product makes two copies of the rows and is 7x slower)."""
        z = self.z[s:e]
        for c, (j, m) in enumerate(zip(self._upper[0].tolist(), self._upper[1].tolist(), strict=True)):
            np.multiply(z[:, j], z[:, m], out=out[:, c])

    def _quadratic_sums(self, values: FloatArray) -> FloatArray:
        """Per pair the sums of values_i [z_j z_l]_i, the products formed a
        block of whole pairs at a time: each pair's sum is the same sequence
        of additions as one product with the stored products would make."""
        from scipy.sparse import csr_matrix

        out = np.empty((self.pairs, self._products))
        for p0, p1 in self._pair_blocks:
            s, e = int(self.indptr[p0]), int(self.indptr[p1])
            block = np.empty((e - s, self._products))
            self._quadratic_rows(s, e, block)
            matrix = csr_matrix(
                (values[s:e], self.columns[: e - s], self.indptr[p0 : p1 + 1] - s), shape=(p1 - p0, e - s)
            )
            out[p0:p1] = matrix @ block
        return out

    def _derivatives(
        self, params: FloatArray, w: FloatArray | None, hessian: bool = True
    ) -> tuple[FloatArray, FloatArray]:
        p = expit(self._margin(params))
        r = p - self.y
        if w is not None:
            r *= w
        grad_sums = self._per_pair(r)
        if not hessian:
            return self._gradient(params, grad_sums), np.zeros(0)
        h = p
        h *= 1 - p
        if w is not None:
            h *= w
        return self._gradient(params, grad_sums), self._hessian(self._per_pair(h, hessian=True))

    def _gradient(self, params: FloatArray, sums: FloatArray) -> FloatArray:
        n = self.n
        grad = np.empty(n + self.k)
        grad[:n] = np.bincount(self.pa, sums[:, 0], n) - np.bincount(self.pb, sums[:, 0], n)
        grad[:n] += self.ridge * params[:n]
        grad[n:] = sums[:, 1 : 1 + self.k].sum(axis=0)
        return grad

    def _hessian(self, sums: FloatArray) -> FloatArray:
        """Assemble the Hessian from per-pair sums of h * [1, z, z z^T]."""
        n, k = self.n, self.k
        hess = np.empty((n + k, n + k))
        pair_h = sums[:, 0]
        flat = np.bincount(self.pa * n + self.pb, pair_h, n * n) + np.bincount(self.pb * n + self.pa, pair_h, n * n)
        off = flat.reshape(n, n)
        hess[:n, :n] = -off
        hess[np.arange(n), np.arange(n)] += off.sum(axis=1) + self.ridge
        cross = np.empty((n, k))
        for j in range(k):
            cross[:, j] = np.bincount(self.pa, sums[:, 1 + j], n) - np.bincount(self.pb, sums[:, 1 + j], n)
        hess[:n, n:] = cross
        hess[n:, :n] = cross.T
        zz = np.zeros((k, k))
        zz[self._upper] = sums[:, 1 + k :].sum(axis=0)
        hess[n:, n:] = zz + np.triu(zz, 1).T
        return hess

    def _one_step_bootstrap(
        self,
        full: StyleFit,
        children: list[np.random.SeedSequence],
        progress: Callable[[int], None] | None,
    ) -> tuple[FloatArray, FloatArray]:
        """One Newton step from the full-data fit for every round at once.

        At the full-data solution each battle's residual r and curvature h
        are fixed, so a round's gradient and Hessian are linear in its battle
        multiplicities W: per pair the sums of W r, W h and W h z, and for the
        style block W @ (r z). Only the 5 x 5 style-style block of the Hessian
        is taken from the full data. The step's error is second order in the
        round's deviation from the full-data fit (a one-step bootstrap). W is drawn chunk by chunk (how many of a round's N draws land
        in each chunk, then which battles), an exact multinomial resample that
        never holds the whole (rounds x N) matrix.
        """
        rounds, n, k = len(children), self.n, self.k
        params = np.r_[full.theta, full.beta]
        p = expit(self._margin(params))
        r = p - self.y
        h = p * (1 - p)
        _, hess = self._derivatives(params, self.weight)
        draws = _ChunkedMultinomial(self.size, self.weight)
        rngs = [np.random.default_rng(c) for c in children]
        landing = np.stack([draws.landing(g) for g in rngs])
        # per pair and round: sums of W [r, h, h z] (gradient, curvature, cross terms)
        per_pair = np.zeros((self.pairs, rounds, 2 + k))
        style_grad = np.zeros((rounds, k))
        for c, (s, e) in enumerate(draws.spans):
            w = np.empty((rounds, e - s))
            for i, g in enumerate(rngs):
                w[i] = draws.chunk(g, c, landing[i, c])
            style_grad += w @ (self.z[s:e] * r[s:e, None])
            local = np.empty((e - s, 2 + k))
            local[:, 0] = r[s:e]
            local[:, 1] = h[s:e]
            np.multiply(self.z[s:e], h[s:e, None], out=local[:, 2:])
            # pair segments overlapping this chunk: one small matrix product each,
            # which BLAS does far faster than segment sums of (rounds x chunk) products
            first = int(np.searchsorted(self.indptr, s, side="right")) - 1
            last = int(np.searchsorted(self.indptr, e, side="left"))
            bounds = (np.clip(self.indptr[first : last + 1], s, e) - s).tolist()
            block = np.empty((last - first, rounds, 2 + k))
            for j, (lo, hi) in enumerate(pairwise(bounds)):
                np.matmul(w[:, lo:hi], local[lo:hi], out=block[j])
            per_pair[first:last] += block
            if progress is not None:
                progress(0)
        grads = np.empty((rounds, n + k))
        grad_pairs = per_pair[:, :, 0].T
        grads[:, :n] = _scatter_pairs(grad_pairs, self.pa, n) - _scatter_pairs(grad_pairs, self.pb, n)
        grads[:, :n] += self.ridge * full.theta
        grads[:, n:] = style_grad
        # each round's own contender and contender-by-style curvature; only the
        # 5 x 5 style block stays at its full-data value (measured: it barely moves)
        curvature = per_pair[:, :, 1].T
        cross = np.stack(
            [
                _scatter_pairs(per_pair[:, :, 2 + j].T, self.pa, n)
                - _scatter_pairs(per_pair[:, :, 2 + j].T, self.pb, n)
                for j in range(k)
            ],
            axis=2,
        )
        steps = np.empty_like(grads)
        for i in range(rounds):
            hess[:n, :n] = _pair_laplacian(self.pa, self.pb, curvature[i], n) + self.ridge * np.eye(n)
            hess[:n, n:] = cross[i]
            hess[n:, :n] = cross[i].T
            steps[i] = self._solve(grads[i], hess)
        thetas = full.theta + steps[:, :n] - steps[:, :n].mean(axis=1, keepdims=True)
        betas = full.beta + steps[:, n:]
        if progress is not None:
            progress(rounds)
        return thetas, betas


def _stable_order(key: IntArray, bound: int) -> IntArray:
    """np.argsort(key, kind="stable") for keys in [0, bound): a stable order
    is unique, and for 16-bit keys numpy sorts by radix, several times faster."""
    if bound <= 1 << 16:
        return np.argsort(key.astype(np.uint16), kind="stable")
    return np.argsort(key, kind="stable")


def _pair_laplacian(a: IntArray, b: IntArray, weight: FloatArray, n: int) -> FloatArray:
    flat = np.bincount(a * n + b, weight, n * n) + np.bincount(b * n + a, weight, n * n)
    off = flat.reshape(n, n)
    lap = -off
    lap[np.arange(n), np.arange(n)] += off.sum(axis=1)
    return lap.astype(np.float64, copy=False)


def _scatter_pairs(per_pair: FloatArray, side: IntArray, n: int) -> FloatArray:
    """(rounds, pairs) -> (rounds, n): each pair's value added to its contender."""
    from scipy.sparse import csr_matrix

    incidence = csr_matrix((np.ones(side.size), (np.arange(side.size), side)), shape=(side.size, n))
    return np.asarray((incidence.T @ per_pair.T).T)


# -- helpers -----------------------------------------------------------------


class _ChunkedMultinomial:
    """A multinomial resample of N battles (with vote counts as multiplicities),
    drawn chunk by chunk: first how many of the N draws land in each chunk,
    then which battles within it. Round i draws only from its own generator,
    in the same order whether the rounds are drawn whole or chunk-major."""

    CHUNK = 100_000

    def __init__(self, size: int, weight: FloatArray | None) -> None:
        bounds = np.unique(np.r_[np.arange(0, size, self.CHUNK), size])
        self.spans = [(int(s), int(e)) for s, e in pairwise(bounds)]
        self.weight = weight
        if weight is None:
            mass = np.diff(bounds).astype(np.float64)
            self.total = size
        else:
            mass = np.array([weight[s:e].sum() for s, e in self.spans])
            self.total = int(round(float(weight.sum())))
        self.share = mass / mass.sum() if mass.size else mass
        self.size = size

    def landing(self, rng: np.random.Generator) -> IntArray:
        return rng.multinomial(self.total, self.share)

    def chunk(self, rng: np.random.Generator, index: int, draws: int) -> IntArray:
        s, e = self.spans[index]
        if self.weight is None:
            picks = rng.integers(0, e - s, draws, dtype=np.int32)
        else:
            cumulative = np.cumsum(self.weight[s:e])
            picks = np.searchsorted(cumulative, rng.random(draws) * cumulative[-1], side="right")
            picks = np.minimum(picks, e - s - 1)
        return np.bincount(picks, minlength=e - s)

    def full(self, rng: np.random.Generator) -> FloatArray:
        landing = self.landing(rng)
        out = np.empty(self.size)
        for c, (s, e) in enumerate(self.spans):
            out[s:e] = self.chunk(rng, c, int(landing[c]))
        return out


def _solve_or_least_squares(matrix: FloatArray, vector: FloatArray) -> FloatArray:
    """Solve; when a feature never varies (or two move together) the system is
    singular and the minimum-norm step leaves those coefficients at zero."""
    try:
        return np.asarray(np.linalg.solve(matrix, vector), dtype=np.float64)
    except np.linalg.LinAlgError:
        return np.asarray(np.linalg.lstsq(matrix, vector, rcond=None)[0], dtype=np.float64)
