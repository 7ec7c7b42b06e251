"""Votes needed for the same certainty: uniform, weighted and active pair sampling.

    .venv/bin/python benchmarks/sampling.py            # both contender sets, 8 runs each
    .venv/bin/python benchmarks/sampling.py --runs 3 --cap 200000

The truth is Bradley-Terry strengths fitted to the real Chatbot Arena votes
of 2024-08-14 (`../shared/data/chatbot-arena-20240814/`, BSD-3-Clause via
leaderbot), for 30 contenders chosen two ways:

* `most voted`: the 30 models with the most votes (a tight field: 190
  points from first to last, the top five within 28 points);
* `spread`: 30 models at evenly spaced ranks of all 129 (a field like ours,
  strong API models down to offline baselines: about 600 points).

Each run simulates an arena: votes come in batches (a snapshot every batch,
at least 250 votes, 2.5% of the votes so far beyond 10,000), each batch's
pairs are drawn by the sampler from the latest fit, outcomes from the truth
(decisive votes). The sampler is the pool policy itself
(`PoolPolicy.pair_probabilities`):

* `uniform`: equal weights, so every pair equally likely;
* `weighted`: `mode = "weighted"` with weights proportional to each model's
  real number of votes (how Chatbot Arena's traffic was actually spread);
* `active`: `mode = "active"`, equal weights, exploration 0.2.

Reported, as the median over runs: (a) votes until the median 95% interval
half-width (sandwich intervals, as `arena rank --ci sandwich`) is at most 20
points; (b) votes until the true top 5 hold ranks 1-5 exactly (rank = 1 +
the number of contenders surely better, so their intervals are separated),
or `> cap` (the median over runs, with how many runs got there); (c) the share of all 95% intervals, at the moment of (a), that
cover the true rating (every run, every contender).

Two more samplers test the argument below (they live only here):

* `widest`: the criterion's own rule on the sandwich covariance of the
  latest fit: pairs by how much one vote shrinks the variances of the
  contenders whose 95% intervals are still wider than 20 points (exploration
  as `active`);
* `half board`: 90% of the pairs among 16 of the 30 contenders, 10% uniform.

`widest@(a)` is the widest half-width when (a) is reached.

Why no sampler here reaches 0.6x on (a). A decisive vote between i and j
adds p(1-p) <= 0.25 to the trace of the Fisher information F of the
sum-zero strengths, so trace(F) <= votes / 2 whatever the design, and the
summed variance trace(F^+) = sum of 1/eigenvalue over F's n - 1 non-zero
eigenvalues is at least (n - 1)^2 / trace(F) (arithmetic vs harmonic mean).
Uniform pairs give a complete design with (nearly) equal eigenvalues, so they
(nearly) attain that bound at their own mean p(1-p): for the same mean
variance any design needs at least (mean p(1-p) of uniform pairs / 0.25) x
uniform's votes, printed as `best possible (a)`: 0.95x for the tight field,
0.84x for the spread one. The A-optimal `active` rule and the sandwich-based
`widest` rule both land at 0.98-1.00x (the printed votes move in batch steps
of 2.5%), inside that bound: uniform's intervals are already nearly equal,
so there is little for either to move. Criterion (a) is a *median* over
contenders, and a design may try to meet it by rating half the board: even
`half board`, with 90% of its votes on 16 of the 30, needs about 0.87x,
leaving the other intervals three to five times as wide, because every
interval is of a strength relative to the board's mean (sum-zero, as here,
or an anchor), which carries the neglected contenders' uncertainty. So 0.6x
uniform's votes on (a) is out of reach for any sampler that spends its
votes on the whole board (the bound), and was not reached by one that
neglects half of it; where adaptive sampling pays is (b), separating the true top five,
where `active` needs about 0.6-0.75x uniform's votes.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from arena.config import ContenderConfig, PoolConfig
from arena.pool.active import Evidence
from arena.pool.policy import PoolPolicy
from arena.ratings import bt
from arena.ratings.bt import Matchups

REAL_DATA = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "chatbot-arena-20240814" / "pair_counts.json"
)
REAL_DATA_FALLBACK = Path("/work/shared/data/chatbot-arena-20240814/pair_counts.json")
Z95 = 1.959963984540054
TARGET_HALF_WIDTH = 20.0
BATCH_SHARE = 0.025  # a snapshot after every 2.5% more votes (at least 250)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--cap", type=int, default=1_000_000, help="stop a run after this many votes")
    parser.add_argument("--exploration", type=float, default=0.2)
    parser.add_argument(
        "--samplers",
        nargs="*",
        default=["uniform", "weighted", "active", "widest", "half board"],
        help="uniform first: the ratio's base",
    )
    args = parser.parse_args()
    _, theta, votes = real_truth()
    print(
        f"{'contenders':<11} {'sampler':<9} {'(a) votes':>10} {'x uniform':>9} {'(b) votes (runs)':>17} {'(c) coverage':>12}"
        f" {'widest@(a)':>10} {'runs':>5} {'s':>6}"
    )
    with threadpool_limits(limits=1, user_api="blas"):
        for label, chosen in contender_sets(theta, votes).items():
            truth = theta[chosen] - theta[chosen].mean()
            weights = votes[chosen] / votes[chosen].mean()
            uniform_a = None
            for sampler in args.samplers:
                started = time.perf_counter()
                results = [
                    simulate(truth, sampler, weights, seed, args.cap, args.exploration) for seed in range(args.runs)
                ]
                a = float(np.median([r.votes_to_half_width for r in results]))
                b_values = [np.inf if r.votes_to_top5 is None else r.votes_to_top5 for r in results]
                reached = sum(np.isfinite(b_values))
                b_median = float(np.median(b_values))
                b = f"{'> cap' if np.isinf(b_median) else f'{b_median:,.0f}'} ({reached}/{len(results)})"
                coverage = np.mean(np.concatenate([r.covered for r in results]))
                widest = float(np.median([r.widest_at_half_width for r in results]))
                uniform_a = uniform_a or a
                print(
                    f"{label:<11} {sampler:<9} {a:>10,.0f} {a / uniform_a:>9.2f} {b:>17} {coverage:>12.3f}"
                    f" {widest:>10.0f} {args.runs:>5} {time.perf_counter() - started:>6.1f}"
                )
            p = 1 / (1 + np.exp(-(truth[:, None] - truth[None, :])))
            mean_w = float((p * (1 - p))[np.triu_indices(truth.size, 1)].mean())
            print(
                f"{label:<11} best possible (a) ~ {mean_w / 0.25:.2f} x uniform (mean p(1-p) of uniform pairs {mean_w:.3f})"
            )
    print(
        f"(a) median 95% half-width <= {TARGET_HALF_WIDTH:g} points; (b) true top 5 at ranks 1-5; "
        f"(c) 95% intervals covering the truth at (a); cap {args.cap:,} votes"
    )


@dataclass
class Run:
    votes_to_half_width: float
    votes_to_top5: int | None
    covered: np.ndarray
    widest_at_half_width: float  # the widest 95% half-width when (a) is reached


def simulate(truth: np.ndarray, sampler: str, weights: np.ndarray, seed: int, cap: int, exploration: float) -> Run:
    n = truth.size
    rng = np.random.default_rng(seed)
    names = [f"c{i:02d}" for i in range(n)]
    policy = _policy(
        names,
        weights if sampler == "weighted" else np.ones(n),
        "active" if sampler == "active" else "weighted",
        exploration,
    )
    available = dict(zip(names, (weights if sampler == "weighted" else np.ones(n)).tolist(), strict=True))
    upper = np.triu_indices(n, 1)
    p_true = 1 / (1 + np.exp(-(truth[upper[0]] - truth[upper[1]])))
    battles = np.zeros(upper[0].size)
    wins = np.zeros(upper[0].size)
    true_top = np.argsort(-truth)[:5]
    total, fit, evidence = 0, None, None
    to_half: float | None = None
    to_top5: int | None = None
    covered = np.zeros(0)
    sigma = None
    while total < cap and (to_half is None or to_top5 is None):
        if sampler == "widest" and sigma is not None and fit is not None:
            probs = widest_pair_probabilities(fit.theta, sigma, exploration)
        elif sampler == "half board":
            probs = half_board_probabilities(n)
        else:
            _, probs = policy.pair_probabilities(available, evidence)
        batch = max(250, int(BATCH_SHARE * total))
        drawn = rng.multinomial(batch, probs[upper] / probs[upper].sum())
        battles += drawn
        wins += rng.binomial(drawn, p_true)
        total += batch
        m = _matchups(n, upper, battles, wins)
        fit = bt.fit_bt(m, init=None if fit is None else fit.theta)
        sigma = bt.sandwich_covariance(m, fit)
        half = Z95 * bt.POINTS_PER_UNIT * np.sqrt(np.clip(np.diag(sigma), 0, None))
        ratings = bt.POINTS_PER_UNIT * fit.theta
        if to_half is None and np.median(half) <= TARGET_HALF_WIDTH:
            to_half = total
            covered = np.abs(ratings - bt.POINTS_PER_UNIT * truth) <= half
            widest = float(half.max())
        if to_top5 is None:
            low, high = ratings - half, ratings + half
            ranks = 1 + (low[None, :] > high[:, None]).sum(axis=1)
            if all(ranks[true_top[k]] == k + 1 for k in range(5)):
                to_top5 = total
        counts = np.zeros((n, n))
        counts[upper] = battles
        evidence = Evidence(tuple(names), fit.theta, counts + counts.T)
    return Run(float("nan") if to_half is None else float(to_half), to_top5, covered, widest)


def widest_pair_probabilities(theta: np.ndarray, sigma: np.ndarray, exploration: float) -> np.ndarray:
    """Pairs by how much one vote shrinks the variances of the contenders whose
    intervals are still wider than the target (the criterion's own rule, on
    the sandwich covariance): gain_ij = w sum_{k wide} (Sigma u)_k^2 / (1 + w u^T Sigma u),
    mixed with `exploration` of uniform pairs."""
    n = theta.size
    half = Z95 * bt.POINTS_PER_UNIT * np.sqrt(np.clip(np.diag(sigma), 0, None))
    wide = half > TARGET_HALF_WIDTH
    if not wide.any():
        wide[:] = True
    p = 1 / (1 + np.exp(-(theta[:, None] - theta[None, :])))
    w = p * (1 - p)
    rows = sigma[wide]  # (k, n): (Sigma u)_k = sigma[k, i] - sigma[k, j]
    reach = (rows**2).sum(0)[:, None] + (rows**2).sum(0)[None, :] - 2 * rows.T @ rows
    d = np.diag(sigma)
    spread = d[:, None] + d[None, :] - 2 * sigma
    gain = w * np.clip(reach, 0, None) / (1 + w * np.clip(spread, 0, None))
    np.fill_diagonal(gain, 0.0)
    gain /= np.triu(gain, 1).sum()
    uniform = np.ones((n, n)) - np.eye(n)
    uniform /= np.triu(uniform, 1).sum()
    return (1 - exploration) * gain + exploration * uniform


def half_board_probabilities(n: int, trickle: float = 0.1) -> np.ndarray:
    """90% of the pairs among the first n // 2 + 1 contenders, 10% uniform: what
    it takes to meet a *median* criterion with fewer votes (the trickle keeps
    every contender connected, so its interval is wide rather than undefined)."""
    k = n // 2 + 1
    half = np.zeros((n, n))
    half[:k, :k] = 1.0
    np.fill_diagonal(half, 0.0)
    uniform = np.ones((n, n)) - np.eye(n)
    return (1 - trickle) * half / np.triu(half, 1).sum() + trickle * uniform / np.triu(uniform, 1).sum()


def _policy(names: list[str], weights: np.ndarray, mode: str, exploration: float) -> PoolPolicy:
    contenders = [
        ContenderConfig(name=n, provider="baseline", model=n, weight=float(w))
        for n, w in zip(names, weights, strict=True)
    ]
    sampling = {"mode": mode, "exploration": exploration} if mode == "active" else {}
    return PoolPolicy.from_config(PoolConfig(contenders=contenders, sampling=sampling))


def _matchups(n: int, upper: tuple[np.ndarray, np.ndarray], battles: np.ndarray, wins: np.ndarray) -> Matchups:
    a = np.r_[upper[0], upper[0]]
    b = np.r_[upper[1], upper[1]]
    outcome = np.r_[np.ones(battles.size), np.zeros(battles.size)]
    count = np.r_[wins, battles - wins]
    keep = count > 0
    return Matchups(n, a[keep], b[keep], outcome[keep], count[keep].astype(np.float64))


def real_truth() -> tuple[list[str], np.ndarray, np.ndarray]:
    """Strengths of all 129 models fitted to the real votes, and each model's vote count."""
    path = REAL_DATA if REAL_DATA.exists() else REAL_DATA_FALLBACK
    data = json.loads(path.read_text())
    pairs = np.asarray(data["X"], dtype=np.int64)
    counts = np.asarray(data["Y"], dtype=np.float64)
    a = np.repeat(pairs[:, 0], 3)
    b = np.repeat(pairs[:, 1], 3)
    outcome = np.tile([1.0, 0.0, 0.5], pairs.shape[0])
    count = np.c_[counts[:, 0], counts[:, 1], counts[:, 2] + counts[:, 3]].ravel()
    keep = count > 0
    n = len(data["models"])
    m = Matchups(n, a[keep], b[keep], outcome[keep], count[keep])
    votes = np.bincount(m.a, m.count, n) + np.bincount(m.b, m.count, n)
    return list(data["models"]), bt.fit_bt(m).theta, votes


def contender_sets(theta: np.ndarray, votes: np.ndarray) -> dict[str, np.ndarray]:
    by_rating = np.argsort(-theta)
    return {
        "most voted": np.argsort(-votes)[:30],
        "spread": by_rating[np.linspace(0, theta.size - 1, 30).round().astype(int)],
    }


if __name__ == "__main__":
    main()
