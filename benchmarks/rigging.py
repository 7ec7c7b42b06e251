"""How many adversarial votes does it take to lift a contender one rank?

    .venv/bin/python benchmarks/rigging.py                  # the table in the issue's closing note
    .venv/bin/python benchmarks/rigging.py --honest 50000 --target-rank 5

Honest traffic is simulated from Bradley-Terry ratings fitted to the real
Chatbot Arena counts in `../shared/data/chatbot-arena-20240814/` (the 30
contenders with the most votes; their tie share): uniform random pairs and
sides, voters casting about ten votes each (geometric). The target is the
contender at `--target-rank` of the honest fit; "lifted" means its place in
the point-estimate order improved by at least one.

Attackers control N voter identities (1, 5, 20) and cast their votes round
robin over them:

* target-only (Huang et al. 2025): start battles until the de-anonymiser
  (accuracy `--accuracy`, 95%) says the target is in one, then vote for it
  (for the wrong side when it errs);
* omnipresent (Min et al. 2025): vote in battles *without* the target, each
  time for the side whose win moves the target most against the contender
  just above it (the influence of one vote on the fitted gap, recomputed
  from the public ratings as the attack goes); a vote is random when the
  de-anonymiser misreads a side.

Defences off: every vote is rated. Defences on: the arena's voter anomaly
test (arena.ratings.anomaly, alpha 0.01) runs on the whole log and every vote
of a flagged identity is left out; each identity may cast at most
`--votes-per-day` votes a day over `--days` days (the `[integrity]` limit),
beyond which votes are refused but still counted as the attacker's effort.
Reading time and the challenge cost the attacker time, not votes, and are
not modelled. The count is the number of votes the attacker cast when the
target first moves up (searched by doubling then bisection over one fixed
attack sequence); "> B" means not within the budget B, or not at all.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit
from threadpoolctl import threadpool_limits

from arena.ratings import bt
from arena.ratings.anomaly import DEFAULT_ALPHA, screen_voters

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "chatbot-arena-20240814" / "pair_counts.json"
DATA_FALLBACK = Path("/work/shared/data/chatbot-arena-20240814/pair_counts.json")


@dataclass
class Arena:
    names: list[str]
    truth: np.ndarray  # natural-unit strengths
    tie_rate: float
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    voter: np.ndarray  # honest voter ids 0..V-1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contenders", type=int, default=30)
    parser.add_argument("--honest", type=int, default=200_000, help="honest votes")
    parser.add_argument("--target-rank", type=int, default=10)
    parser.add_argument("--accuracy", type=float, default=0.95, help="the de-anonymiser's accuracy")
    parser.add_argument("--identities", type=int, nargs="*", default=[1, 5, 20])
    parser.add_argument("--votes-per-day", type=int, default=200)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--budget", type=int, default=50_000, help="most adversarial votes tried")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with threadpool_limits(limits=1, user_api="blas"):
        run(args)


def run(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    arena = honest_arena(args.contenders, args.honest, rng)
    n = len(arena.names)
    honest_fit = fit(arena.a, arena.b, arena.y, n)
    order = list(np.argsort(-honest_fit))
    target = int(order[args.target_rank - 1])
    above = int(order[args.target_rank - 2])
    gap = bt.POINTS_PER_UNIT * (honest_fit[above] - honest_fit[target])
    screening = screen_voters(arena.a, arena.b, arena.y, arena.voter, honest_fit, alpha=DEFAULT_ALPHA)
    print(
        f"honest traffic: {args.honest:,} votes from {arena.voter.max() + 1:,} voters among {n} contenders "
        f"(Chatbot Arena 2024-08-14 ratings, tie share {arena.tie_rate:.0%})"
    )
    print(
        f"target: #{args.target_rank} {arena.names[target]}, {gap:.1f} points below #{args.target_rank - 1} "
        f"{arena.names[above]}; de-anonymiser accuracy {args.accuracy:.0%}"
    )
    print(
        f"anomaly test on honest traffic alone: {screening.flagged.size} of {screening.voters_tested:,} voters "
        f"flagged, {screening.votes_flagged / args.honest:.3%} of honest votes"
    )
    print(
        f"defences on: anomaly test (alpha {DEFAULT_ALPHA}), {args.votes_per_day} votes per identity per day "
        f"over {args.days} days\n"
    )
    header = (
        f"{'attack':<14} {'identities':>10} {'votes, off':>11} {'votes, on':>10} {'ratio':>7} {'honest flagged':>15}"
    )
    print(header)
    print("-" * len(header))
    for attack in ("target-only", "omnipresent"):
        for identities in args.identities:
            started = time.perf_counter()
            plan = attack_plan(attack, arena, honest_fit, target, above, identities, args, rng)
            off, _ = votes_needed(arena, plan, target, args.target_rank, defended=False, args=args)
            on, honest_flagged = votes_needed(arena, plan, target, args.target_rank, defended=True, args=args)
            print(
                f"{attack:<14} {identities:>10} {fmt(off, args.budget):>11} {fmt(on, args.budget):>10} "
                f"{ratio(off, on, args.budget):>7} {honest_flagged:>14.3%}   ({time.perf_counter() - started:.0f} s)"
            )


def honest_arena(contenders: int, votes: int, rng: np.random.Generator) -> Arena:
    path = DATA if DATA.exists() else DATA_FALLBACK
    data = json.loads(path.read_text())
    pairs = np.asarray(data["X"], dtype=np.int64)
    counts = np.asarray(data["Y"], dtype=np.float64)  # wins i, wins j, ties, both bad
    total = np.bincount(pairs[:, 0], counts.sum(1), len(data["models"])) + np.bincount(
        pairs[:, 1], counts.sum(1), len(data["models"])
    )
    chosen = np.argsort(-total)[:contenders]
    index = np.full(len(data["models"]), -1)
    index[chosen] = np.arange(contenders)
    keep = (index[pairs[:, 0]] >= 0) & (index[pairs[:, 1]] >= 0)
    pi, pj, c = index[pairs[keep, 0]], index[pairs[keep, 1]], counts[keep]
    a = np.r_[pi, pi, pi]
    b = np.r_[pj, pj, pj]
    y = np.r_[np.ones(pi.size), np.zeros(pi.size), np.full(pi.size, 0.5)]
    w = np.r_[c[:, 0], c[:, 1], c[:, 2] + c[:, 3]]
    truth = bt.fit_bt(bt.Matchups(contenders, a, b, y, w)).theta
    tie_rate = float((c[:, 2] + c[:, 3]).sum() / c.sum())
    sa = rng.integers(0, contenders, votes)
    sb = (sa + rng.integers(1, contenders, votes)) % contenders
    sy = np.where(rng.random(votes) < expit(truth[sa] - truth[sb]), 1.0, 0.0)
    sy[rng.random(votes) < tie_rate] = 0.5
    per_voter = rng.geometric(0.1, votes)  # about ten votes each
    voter = np.repeat(np.arange(per_voter.size), per_voter)[:votes]
    names = [data["models"][i] for i in chosen]
    return Arena(names, truth, tie_rate, sa, sb, sy, voter)


@dataclass
class Plan:
    """One fixed sequence of adversarial votes, in the order they are cast."""

    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    identity: np.ndarray


def attack_plan(
    kind: str,
    arena: Arena,
    honest_fit: np.ndarray,
    target: int,
    above: int,
    identities: int,
    args: argparse.Namespace,
    rng: np.random.Generator,
) -> Plan:
    n = len(arena.names)
    size = args.budget
    # target-only needs about n / 2 battles started per battle with the target in it
    a = rng.integers(0, n, size * (n if kind == "target-only" else 2))
    b = (a + rng.integers(1, n, a.size)) % n
    if kind == "target-only":
        present = (a == target) | (b == target)
        right = rng.random(a.size) < args.accuracy
        # it errs both ways: a wrong call inside a target battle votes for the other side,
        # a false alarm elsewhere votes for a random side
        false_alarm = ~present & (rng.random(a.size) < (1 - args.accuracy) * 2 / (n - 1))
        voted = present | false_alarm
        y = np.where(present, np.where(a == target, 1.0, 0.0), rng.integers(0, 2, a.size).astype(float))
        y = np.where(present & ~right, 1.0 - y, y)
        a, b, y = a[voted][:size], b[voted][:size], y[voted][:size]
    else:
        skip = (a == target) | (b == target)
        a, b = a[~skip][:size], b[~skip][:size]
        y = np.empty(a.size)
        theta = honest_fit.copy()
        honest = bt.aggregate(arena.a, arena.b, arena.y, n)
        batch = 200
        read = rng.random(a.size) < args.accuracy**2  # both sides identified
        coin = rng.integers(0, 2, a.size).astype(float)
        for start in range(0, a.size, batch):
            # the attacker reads the public ratings and the influence of one vote on the gap
            p = expit(theta[honest.a] - theta[honest.b])
            hessian = bt._laplacian(honest.a, honest.b, honest.count * p * (1 - p), n)
            contrast = np.zeros(n)
            contrast[target], contrast[above] = 1.0, -1.0
            w = np.linalg.solve(hessian + np.ones((n, n)) / n, contrast)
            sl = slice(start, start + batch)
            y[sl] = np.where(read[sl], (w[a[sl]] > w[b[sl]]).astype(float), coin[sl])
            if start % 2000 == 0 and start:
                theta = fit(np.r_[arena.a, a[:start]], np.r_[arena.b, b[:start]], np.r_[arena.y, y[:start]], n)
    identity = np.arange(a.size) % identities
    return Plan(a, b, y, identity)


def votes_needed(
    arena: Arena, plan: Plan, target: int, rank: int, *, defended: bool, args: argparse.Namespace
) -> tuple[int | None, float]:
    """Smallest k (doubling then bisection) whose first k attack votes lift the target."""
    worst_honest = 0.0

    def lifted(k: int) -> bool:
        nonlocal worst_honest
        a, b, y, ident = plan.a[:k], plan.b[:k], plan.y[:k], plan.identity[:k]
        if defended:  # each identity's votes beyond its daily allowance over the window are refused
            seen = np.zeros(k, dtype=np.int64)
            if k:
                order = np.argsort(ident, kind="stable")
                starts = np.r_[0, np.flatnonzero(np.diff(ident[order])) + 1]
                pos = np.arange(k) - np.repeat(starts, np.diff(np.r_[starts, k]))
                seen[order] = pos
            allowed = seen < args.votes_per_day * args.days
            a, b, y, ident = a[allowed], b[allowed], y[allowed], ident[allowed]
        n = len(arena.names)
        all_a, all_b, all_y = np.r_[arena.a, a], np.r_[arena.b, b], np.r_[arena.y, y]
        voter = np.r_[arena.voter, arena.voter.max() + 1 + ident]
        theta = fit(all_a, all_b, all_y, n)
        if defended:
            screening = screen_voters(all_a, all_b, all_y, voter, theta, alpha=DEFAULT_ALPHA)
            drop = screening.vote_flagged
            worst_honest = max(worst_honest, float(drop[: arena.a.size].mean()))
            if drop.any():
                theta = fit(all_a[~drop], all_b[~drop], all_y[~drop], n)
        position = 1 + int((theta > theta[target]).sum())
        return position < rank

    hi = 1
    while hi <= plan.a.size and not lifted(hi):
        hi *= 2
    if hi > plan.a.size:
        if not lifted(plan.a.size):
            return None, worst_honest
        hi = plan.a.size
    lo = hi // 2  # does not lift (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if lifted(mid):
            hi = mid
        else:
            lo = mid
    return hi, worst_honest


def fit(a: np.ndarray, b: np.ndarray, y: np.ndarray, n: int) -> np.ndarray:
    return bt.fit_bt(bt.aggregate(a, b, y, n)).theta


def fmt(votes: int | None, budget: int) -> str:
    return f"> {budget:,}" if votes is None else f"{votes:,}"


def ratio(off: int | None, on: int | None, budget: int) -> str:
    if off is None:
        return "-"
    if on is None:
        return f"> {math.floor(budget / off)}x"
    return f"{on / off:.1f}x"


if __name__ == "__main__":
    main()
