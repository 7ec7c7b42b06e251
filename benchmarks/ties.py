"""Held-out comparison of the tie models: half a win (default), Davidson, draws ignored.

    .venv/bin/python benchmarks/ties.py              # real Chatbot Arena counts + two simulations
    .venv/bin/python benchmarks/ties.py --folds 10

K-fold cross-validation over votes: each fold's votes are held out, the
three models are fitted on the rest, and the held-out votes are scored:

* `decisive log-loss` / `decisive acc`: on held-out decisive votes (a or b
  won), -mean log P(actual winner) and the share where the favourite won
  (a predicted 50/50 counts half). Every model predicts a decisive vote as
  the logistic of the strength gap, so this compares the strengths alone.
* `3-way log-loss`: on every held-out vote, with a tie as its own outcome.
  Davidson predicts it natively; for half-win and draws-ignored,
  P(tie) = the training tie share and P(a wins) = (1 - that) * logistic(gap).

Data: the real Chatbot Arena votes of 2024-08-14 (1.67M battles among 129
models; `../shared/data/chatbot-arena-20240814/`, BSD-3-Clause via leaderbot),
with ties and both-bad both as ties; and two simulations with 30 contenders
and 200k votes: one where ties follow Davidson's model, one where a vote is a
tie with a fixed 25% chance regardless of the gap (ties carry no information
about the pair).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.special import expit

from arena.ratings import bt, ties
from arena.ratings.bt import Matchups

REAL_DATA = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "chatbot-arena-20240814" / "pair_counts.json"
)
REAL_DATA_FALLBACK = Path("/work/shared/data/chatbot-arena-20240814/pair_counts.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    datasets = [("real Chatbot Arena (1.67M)", real_rows())]
    datasets.append(("simulated, Davidson ties", simulated_rows(rng, davidson=True)))
    datasets.append(("simulated, ties at random", simulated_rows(rng, davidson=False)))
    print(f"{args.folds}-fold held-out scores (lower log-loss and higher accuracy are better)")
    print(f"{'data':<28} {'model':<10} {'decisive log-loss':>17} {'decisive acc':>12} {'3-way log-loss':>14}")
    for label, m in datasets:
        scores = cross_validate(m, args.folds, rng)
        best = min(scores, key=lambda k: scores[k][0])
        for model, (ll, acc, ll3) in scores.items():
            mark = "  <- best decisive log-loss" if model == best else ""
            print(f"{label:<28} {model:<10} {ll:>17.5f} {acc:>12.4f} {ll3:>14.5f}{mark}")


def cross_validate(m: Matchups, folds: int, rng: np.random.Generator) -> dict[str, tuple[float, float, float]]:
    """Per model: (decisive log-loss, decisive accuracy, 3-way log-loss) over all folds."""
    # split each aggregated row's count over the folds: a multinomial draw per row
    split = rng.multinomial(m.count.astype(np.int64), np.full(folds, 1.0 / folds))
    totals = {model: np.zeros(3) for model in ties.TIE_MODELS}
    decisive_votes = all_votes = 0.0
    for k in range(folds):
        test = split[:, k].astype(np.float64)
        train = Matchups(m.n, m.a, m.b, m.outcome, m.count - test)
        held = Matchups(m.n, m.a, m.b, m.outcome, test)
        tie_share = float(train.count[train.outcome == 0.5].sum() / train.total)
        fits = {
            "half": (bt.fit_bt(train).theta, None),
            "ignore": (bt.fit_bt(ties.drop_ties(train)).theta, None),
        }
        davidson = ties.fit_davidson(train)
        fits["davidson"] = (davidson.theta, davidson.log_nu)
        decisive = held.outcome != 0.5
        decisive_votes += float(held.count[decisive].sum())
        all_votes += held.total
        for model, (theta, log_nu) in fits.items():
            p_a = expit(theta[held.a] - theta[held.b])
            p_actual = np.where(held.outcome == 1.0, p_a, 1 - p_a)
            right = np.where(p_a == 0.5, 0.5, ((p_a > 0.5) == (held.outcome == 1.0)).astype(float))
            totals[model][0] += float(-(held.count[decisive] * np.log(p_actual[decisive])).sum())
            totals[model][1] += float((held.count[decisive] * right[decisive]).sum())
            if log_nu is None:
                p3 = np.where(held.outcome == 0.5, tie_share, (1 - tie_share) * p_actual)
                totals[model][2] += float(-(held.count * np.log(p3)).sum())
            else:
                totals[model][2] += -ties.log_likelihood(theta, log_nu, held)
    return {model: (t[0] / decisive_votes, t[1] / decisive_votes, t[2] / all_votes) for model, t in totals.items()}


def real_rows() -> Matchups:
    path = REAL_DATA if REAL_DATA.exists() else REAL_DATA_FALLBACK
    data = json.loads(path.read_text())
    pairs = np.asarray(data["X"], dtype=np.int64)
    counts = np.asarray(data["Y"], dtype=np.float64)  # wins i, wins j, ties, both bad
    a = np.repeat(pairs[:, 0], 3)
    b = np.repeat(pairs[:, 1], 3)
    outcome = np.tile([1.0, 0.0, 0.5], pairs.shape[0])
    count = np.c_[counts[:, 0], counts[:, 1], counts[:, 2] + counts[:, 3]].ravel()
    keep = count > 0
    return Matchups(len(data["models"]), a[keep], b[keep], outcome[keep], count[keep])


def simulated_rows(rng: np.random.Generator, *, davidson: bool, n: int = 30, votes: int = 200_000) -> Matchups:
    theta = rng.normal(0, 0.8, n)
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    u = rng.random(votes)
    if davidson:
        pa, pb, _ = ties.probabilities(theta, np.log(0.7), a, b)
        outcome = np.where(u < pa, 1.0, np.where(u < pa + pb, 0.0, 0.5))
    else:
        outcome = (u < expit(theta[a] - theta[b])).astype(np.float64)
        outcome[rng.random(votes) < 0.25] = 0.5
    return bt.aggregate(a, b, outcome, n)


if __name__ == "__main__":
    main()
