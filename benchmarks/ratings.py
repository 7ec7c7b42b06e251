"""Time and peak memory of a full leaderboard snapshot.

A snapshot is everything `arena rank` computes: the voter anomaly test,
Bradley-Terry with a 100-round bootstrap, the robustness figure, the style-adjusted fit with a 100-round bootstrap,
online Elo, the win-rate matrices and per-category leaderboards.

    .venv/bin/python benchmarks/ratings.py                # 100k, 1M, 3M simulated + real
    .venv/bin/python benchmarks/ratings.py --sizes 100000 --no-real

Each measurement runs in a fresh child process, so its peak resident
memory (ru_maxrss, which includes the vote arrays themselves) is its own.
`snapshot s` is wall time, `cpu s` the process's CPU time (a fairer figure
on a shared machine); the load average is printed first.
Simulated votes: 100 contenders with normal strengths, five style features
per answer drawn around realistic counts, a known style effect, 10% ties.
The real line expands `../shared/data/chatbot-arena-20240814/pair_counts.json`
(1.67M Chatbot Arena votes among 129 models) into one row per vote; it has
no style metadata, so the style features there are simulated.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

REAL_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "chatbot-arena-20240814" / "pair_counts.json"
REAL_DATA_FALLBACK = Path("/work/shared/data/chatbot-arena-20240814/pair_counts.json")
STYLE_EFFECT = np.array([0.5, 0.1, -0.15, -0.1, 0.06])
FEATURE_MEANS = np.array([350.0, 4.0, 2.0, 3.0, 0.5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000, 3_000_000])
    parser.add_argument("--contenders", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--no-real", action="store_true", help="skip the real Chatbot Arena votes")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.contenders, args.rounds)))
        return
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'votes':>10} {'contenders':>10} {'snapshot s':>10} {'cpu s':>6} {'BT+boot s':>9} {'style s':>8} {'peak MB':>8}  notes")
    jobs = [str(n) for n in args.sizes] + ([] if args.no_real else ["real"])
    for job in jobs:
        out = subprocess.run(
            [sys.executable, __file__, "--child", job, "--contenders", str(args.contenders), "--rounds", str(args.rounds)],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{r['votes']:>10,} {r['contenders']:>10} {r['snapshot_s']:>10.2f} {r['cpu_s']:>6.2f} {r['bt_s']:>9.2f} "
            f"{r['style_s']:>8.2f} {r['peak_mb']:>8.0f}  {r['notes']}"
        )


def _measure(job: str, contenders: int, rounds: int) -> dict[str, Any]:
    from arena.ratings import bt
    from arena.ratings.leaderboard import RankOptions, build_snapshot

    if job == "real":
        log, notes = _real_votes()
    else:
        log, notes = _simulated_votes(int(job), contenders)
    options = RankOptions(rounds=rounds, ci="bootstrap", seed=0, style=True)
    # BT alone (aggregate + exact fit + bootstrap), for comparison with FastChat
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):  # as build_snapshot does
        matchups = bt.aggregate(log.a, log.b, log.outcome, len(log.contenders))
        full = bt.fit_bt(matchups)
        bt.bootstrap_bt(matchups, full, rounds, np.random.default_rng(0))
    bt_s = time.perf_counter() - start
    exactness = _exactness(matchups, full)

    start, cpu = time.perf_counter(), time.process_time()
    snapshot = build_snapshot(log, options)
    snapshot_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    style_s = snapshot["timings"].get("style", float("nan"))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    coefficients = {c["feature"]: c["coefficient"] for c in snapshot["style"]["coefficients"]}
    notes += (
        f"; |BT - logistic regression| max {exactness:.1e} pts; gradient norm {full.gradient_norm:.1e}; "
        f"style bootstrap: {snapshot['style']['ci_method']}; length coef {coefficients['length']:+.3f}"
    )
    return {
        "votes": log.size,
        "contenders": len(log.contenders),
        "snapshot_s": snapshot_s,
        "cpu_s": cpu_s,
        "bt_s": bt_s,
        "style_s": style_s,
        "peak_mb": peak_mb,
        "notes": notes,
    }


def _simulated_votes(size: int, contenders: int):  # type: ignore[no-untyped-def]
    from arena.ratings.leaderboard import VoteLog
    from arena.ratings.style import standardize, style_differences

    rng = np.random.default_rng(size)
    strength = rng.normal(0, 0.8, contenders)
    a = rng.integers(0, contenders, size)
    b = (a + rng.integers(1, contenders, size)) % contenders
    features_a = rng.poisson(FEATURE_MEANS, (size, 5)).astype(np.float64)
    features_b = rng.poisson(FEATURE_MEANS, (size, 5)).astype(np.float64)
    z, _, _ = standardize(style_differences(features_a, features_b))
    p = 1 / (1 + np.exp(-(strength[a] - strength[b] + z @ STYLE_EFFECT)))
    del z
    outcome = (rng.random(size) < p).astype(np.float64)
    outcome[rng.random(size) < 0.1] = 0.5
    languages = rng.choice(5, size, p=[0.6, 0.15, 0.1, 0.1, 0.05])
    categories = {f"language:{code}": np.flatnonzero(languages == i) for i, code in enumerate(["en", "zh", "de", "fr", "ja"])}
    gate = {f"contender-{i}{'+gate' if i % 2 else ''}": bool(i % 2) for i in range(contenders)}
    names = list(gate)
    is_gate = np.array([i % 2 == 1 for i in range(contenders)])
    mixed = is_gate[a] != is_gate[b]
    categories["gate vs plain"] = np.flatnonzero(mixed)
    categories["plain only"] = np.flatnonzero(~is_gate[a] & ~is_gate[b])
    # about ten votes per voter, so the voter anomaly test has its real work to do
    voter = rng.integers(0, max(1, size // 10), size)
    log = VoteLog(names, a, b, outcome, features_a, features_b, np.arange(size, dtype=np.float64), gate, categories,
                  voter=voter, voters=[f"voter-{i}" for i in range(max(1, size // 10))])
    return log, "simulated"


def _real_votes():  # type: ignore[no-untyped-def]
    from arena.ratings.leaderboard import VoteLog

    path = REAL_DATA if REAL_DATA.exists() else REAL_DATA_FALLBACK
    data = json.loads(path.read_text())
    pairs = np.asarray(data["X"], dtype=np.int64)
    counts = np.asarray(data["Y"], dtype=np.int64)  # wins i, wins j, ties, both bad
    per_row = counts.sum(axis=1)
    a = np.repeat(pairs[:, 0], per_row)
    b = np.repeat(pairs[:, 1], per_row)
    outcome = np.concatenate([np.repeat([1.0, 0.0, 0.5, 0.5], c) for c in counts])
    rng = np.random.default_rng(7)
    order = rng.permutation(a.size)  # the file has no time order; Elo replays a random one
    a, b, outcome = a[order], b[order], outcome[order]
    size = a.size
    features_a = rng.poisson(FEATURE_MEANS, (size, 5)).astype(np.float64)
    features_b = rng.poisson(FEATURE_MEANS, (size, 5)).astype(np.float64)
    log = VoteLog(list(data["models"]), a, b, outcome, features_a, features_b, np.arange(size, dtype=np.float64), {}, {})
    return log, "real Chatbot Arena pairs (style features simulated)"


def _exactness(matchups, full) -> float:  # type: ignore[no-untyped-def]
    """Max distance in rating points from a plain logistic regression of the
    same model (scikit-learn, Newton-Cholesky, no penalty) on the aggregated rows."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    from arena.ratings.bt import to_ratings

    rows = matchups.a.size
    x = np.zeros((2 * rows, matchups.n))
    x[np.arange(rows), matchups.a] = 1
    x[np.arange(rows), matchups.b] = -1
    x[rows:] = x[:rows]
    y = np.r_[np.ones(rows), np.zeros(rows)]
    w = np.r_[matchups.count * matchups.outcome, matchups.count * (1 - matchups.outcome)]
    keep = w > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=1000)
        lr.fit(x[keep], y[keep], sample_weight=w[keep])
    return float(np.abs(to_ratings(lr.coef_[0]) - to_ratings(full.theta)).max())


if __name__ == "__main__":
    main()
