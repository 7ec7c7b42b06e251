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

`best possible (a)` bounds what any sampler can do on (a) without letting
some contenders' intervals stay wide: a vote between i and j carries
p(1-p) <= 0.25 units of Fisher information, uniform pairs carry the mean of
p(1-p) over pairs, so no design needs fewer than about
(that mean / 0.25) x uniform's votes.
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
    args = parser.parse_args()
    _, theta, votes = real_truth()
    print(
        f"{'contenders':<11} {'sampler':<9} {'(a) votes':>10} {'x uniform':>9} {'(b) votes (runs)':>17} {'(c) coverage':>12}"
        f" {'runs':>5} {'s':>6}"
    )
    with threadpool_limits(limits=1, user_api="blas"):
        for label, chosen in contender_sets(theta, votes).items():
            truth = theta[chosen] - theta[chosen].mean()
            weights = votes[chosen] / votes[chosen].mean()
            uniform_a = None
            for sampler in ("uniform", "weighted", "active"):
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
                uniform_a = uniform_a or a
                print(
                    f"{label:<11} {sampler:<9} {a:>10,.0f} {a / uniform_a:>9.2f} {b:>17} {coverage:>12.3f}"
                    f" {args.runs:>5} {time.perf_counter() - started:>6.1f}"
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
    while total < cap and (to_half is None or to_top5 is None):
        _, probs = policy.pair_probabilities(available, evidence)
        batch = max(250, int(BATCH_SHARE * total))
        drawn = rng.multinomial(batch, probs[upper] / probs[upper].sum())
        battles += drawn
        wins += rng.binomial(drawn, p_true)
        total += batch
        m = _matchups(n, upper, battles, wins)
        fit = bt.fit_bt(m, init=None if fit is None else fit.theta)
        half = Z95 * bt.POINTS_PER_UNIT * np.sqrt(np.clip(np.diag(bt.sandwich_covariance(m, fit)), 0, None))
        ratings = bt.POINTS_PER_UNIT * fit.theta
        if to_half is None and np.median(half) <= TARGET_HALF_WIDTH:
            to_half = total
            covered = np.abs(ratings - bt.POINTS_PER_UNIT * truth) <= half
        if to_top5 is None:
            low, high = ratings - half, ratings + half
            ranks = 1 + (low[None, :] > high[:, None]).sum(axis=1)
            if all(ranks[true_top[k]] == k + 1 for k in range(5)):
                to_top5 = total
        counts = np.zeros((n, n))
        counts[upper] = battles
        evidence = Evidence(tuple(names), fit.theta, counts + counts.T)
    return Run(float("nan") if to_half is None else float(to_half), to_top5, covered)


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
