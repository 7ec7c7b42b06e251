"""Voter anomaly test: which voters' votes do not look like honest opinions.

FastChat's `outlier_detect` (elo_analysis.py) walks each judge's first votes,
turns each outcome into a one-sided p-value under the pair's vote record and
multiplies `1 / (2 p)` until the product passes `1 / alpha`. We keep its
shape, a sequential test whose running product is an e-process, so by Ville's
inequality an honest voter crosses `1 / alpha` with probability at most
`alpha` however long they vote, and make it sharper in two ways:

* outcomes are judged under the current Bradley-Terry ratings (with the
  arena's tie rate) rather than the pair's raw record, and each p-value goes
  through a proper p-to-e calibrator (`kappa * p ** (kappa - 1)`, whose mean
  is at most 1 for any valid p-value; FastChat's `1 / (2 p)` is not when ties
  are counted);
* per contender, two likelihood-ratio e-processes aimed at the attacks that
  move a board: "this voter makes contender c win" (target-only rigging) and
  "this voter makes c lose" (omnipresent rigging, Min et al. 2025, which
  pushes down the contenders just above a target).

Every e-process of a voter runs over all their votes in time order, and the
voter is flagged when any of them passes `n_tests / alpha` (Bonferroni over
the 2 + 2M tests), so honest voters are flagged with probability <= alpha.

A voter is a cookie, and a script can take a fresh one for every vote: each
of its voters then has too few votes to be evidence. So the same test runs a
second time with the address that started each battle (its HMAC) in place of
the voter (`Screening`): many fresh voters at one address voting one way are
one address with many votes. An address shared by honest people (a campus,
a carrier's NAT) votes as honest voters do, and the test's guarantee holds
for it as for a voter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from arena.ratings.bt import FloatArray, IntArray
from arena.ratings.options import DEFAULT_OUTLIER_ALPHA as DEFAULT_ALPHA

# The calibrator's exponent: small kappa rewards very small p-values more.
KAPPA = 0.5
# The alternative of the per-contender tests: a voter bent on one contender
# picks it 90% of the time, calls a tie 5% and slips 5% (a de-anonymiser errs).
ALT_FAVOURED, ALT_TIE, ALT_SLIP = 0.90, 0.05, 0.05
UNKNOWN_VOTER = -1


@dataclass(frozen=True)
class VoterScreening:
    """The outcome of the anomaly test over one vote log."""

    flagged: IntArray  # voter indices flagged, ascending
    vote_flagged: np.ndarray  # bool per vote: cast by a flagged voter
    voters_tested: int
    alpha: float
    log_threshold: float  # natural log of the e-value a test must pass
    evidence: FloatArray  # per voter: the largest log e-value any of its tests reached

    @property
    def votes_flagged(self) -> int:
        return int(self.vote_flagged.sum())

    def summary(self) -> dict[str, object]:
        return {
            "test": "sequential e-values under the current ratings (FastChat's outlier test, calibrated, "
            "plus per-contender favour/disfavour tests)",
            "alpha": self.alpha,
            "voters_tested": self.voters_tested,
            "voters_flagged": int(self.flagged.size),
            "votes_flagged": self.votes_flagged,
        }


@dataclass(frozen=True)
class Screening:
    """The anomaly test by voter and, where the votes carry addresses, by address.
    A vote is flagged when its voter or its address is."""

    voters: VoterScreening
    addresses: VoterScreening | None = None

    @property
    def vote_flagged(self) -> np.ndarray:
        if self.addresses is None:
            return self.voters.vote_flagged
        flagged: np.ndarray = self.voters.vote_flagged | self.addresses.vote_flagged
        return flagged

    @property
    def votes_flagged(self) -> int:
        return int(self.vote_flagged.sum())

    def summary(self) -> dict[str, object]:
        found = {**self.voters.summary(), "votes_flagged": self.votes_flagged}
        if self.addresses is not None:
            found |= {
                "addresses_tested": self.addresses.voters_tested,
                "addresses_flagged": int(self.addresses.flagged.size),
            }
        return found


def screen_voters(
    a: IntArray,
    b: IntArray,
    outcome: FloatArray,
    voter: IntArray,
    theta: FloatArray,
    *,
    alpha: float = DEFAULT_ALPHA,
    tie_rate: float | None = None,
    order: IntArray | None = None,
) -> VoterScreening:
    """Run the test on every voter with a known id (`voter >= 0`).

    `theta` are the natural-unit Bradley-Terry strengths the outcomes are
    judged under; `order` is the time order of the votes (default: as given);
    `tie_rate` defaults to the share of ties in the log.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.float64)
    voter = np.asarray(voter, dtype=np.int64)
    n_votes = a.size
    n_contenders = int(theta.size)
    n_voters = int(voter.max(initial=-1)) + 1
    n_tests = 2 + 2 * n_contenders
    log_threshold = math.log(n_tests / alpha)
    empty = VoterScreening(np.zeros(0, np.int64), np.zeros(n_votes, bool), 0, alpha, log_threshold, np.zeros(n_voters))
    known = voter >= 0
    if n_votes == 0 or not known.any():
        return empty
    if tie_rate is None:
        tie_rate = float(np.mean(outcome == 0.5))
    # keep the null away from 0 and 1 so a single vote never carries infinite evidence
    tie = min(max(tie_rate, 0.01), 0.9)

    idx = np.arange(n_votes) if order is None else np.asarray(order, dtype=np.int64)
    idx = idx[known[idx]]
    vv = voter[idx]
    tested = np.zeros(n_voters, dtype=bool)
    tested[vv] = True
    evidence = np.full(n_voters, -np.inf)
    # each test's arrays are freed before the next's (ten million votes:
    # several GB if every intermediate lived to the end)
    d = theta[a[idx]] - theta[b[idx]]
    _favourite_tests(evidence, d, outcome[idx], vv, tie)
    _contender_tests(evidence, (a, b, outcome, idx), vv, d, tie, n_contenders)
    del d, vv, idx

    flagged = np.flatnonzero(tested & (evidence >= log_threshold))
    evidence[~tested] = 0.0
    is_flagged = np.zeros(n_voters, dtype=bool)
    is_flagged[flagged] = True
    vote_flagged = np.zeros(n_votes, dtype=bool)
    vote_flagged[known] = is_flagged[voter[known]]
    return VoterScreening(flagged, vote_flagged, int(tested.sum()), alpha, log_threshold, evidence)


def _favourite_tests(evidence: FloatArray, d: FloatArray, vy: FloatArray, vv: IntArray, tie: float) -> None:
    """1. FastChat's test, oriented on the favourite: Y = the favourite's score."""
    y_fav = np.where(d >= 0, vy, 1.0 - vy)
    win = (1.0 - tie) * expit(np.abs(d))
    lose = (1.0 - tie) - win
    by_voter = np.argsort(vv, kind="stable")  # time order kept within each voter
    grouped = vv[by_voter]
    p_upper = np.where(y_fav == 0, lose, np.where(y_fav == 0.5, lose + tie, 1.0))  # underdog voting
    _fold(evidence, *_group_running_max(grouped, _calibrated(p_upper[by_voter])))
    del p_upper
    p_lower = np.where(y_fav == 1, win, np.where(y_fav == 0.5, win + tie, 1.0))  # favourite voting
    del y_fav, win, lose
    _fold(evidence, *_group_running_max(grouped, _calibrated(p_lower[by_voter])))


def _calibrated(p: FloatArray) -> FloatArray:
    """The log e-value of each p-value through the calibrator kappa p^(kappa - 1)."""
    return math.log(KAPPA) + (KAPPA - 1.0) * np.log(np.clip(p, 1e-12, 1.0))


def _contender_tests(
    evidence: FloatArray,
    votes: tuple[IntArray, IntArray, FloatArray, IntArray],
    vv: IntArray,
    d: FloatArray,
    tie: float,
    n_contenders: int,
) -> None:
    """2. per contender: does this voter make c win (or lose) more than the ratings say?
    One entry per (vote, side), interleaved so entries stay in time order.
    `votes` is (a, b, outcome, the tested votes in time order)."""
    a, b, outcome, idx = votes
    group = np.repeat(vv, 2) * n_contenders + np.column_stack([a[idx], b[idx]]).ravel()
    size = group.size
    # a unique key (group, position) sorts faster unstable than the group alone stably
    sort = np.argsort(group * size + np.arange(size))
    group = group[sort]
    vy = outcome[idx]
    score = np.column_stack([vy, 1.0 - vy]).ravel()[sort]
    del vy
    margin = np.column_stack([d, -d]).ravel()[sort]
    del sort
    p_win = expit(margin)
    del margin
    p_win *= 1.0 - tie
    # the null's probability of each outcome, built in place over p_lose (2 entries a vote)
    log_null = (1.0 - tie) - p_win
    np.copyto(log_null, tie, where=score == 0.5)
    np.copyto(log_null, p_win, where=score == 1)
    del p_win
    np.log(np.clip(log_null, 1e-12, 1.0, out=log_null), out=log_null)
    log_alt = np.log([ALT_SLIP, ALT_TIE, ALT_FAVOURED])
    code = np.rint(score * 2).astype(np.int8)  # 0 lost, 1 tie, 2 won
    del score
    # favour c: log alt - log null, in an array of its own (the null is needed again)
    log_e = log_alt[code]
    log_e -= log_null
    groups, best = _group_running_max(group, log_e)
    del log_e
    _fold(evidence, groups // n_contenders, best)
    # disfavour c: alt[2 - code] - log null, made over the null's own array (-x + y is y - x exactly)
    np.negative(log_null, out=log_null)
    for c in range(3):
        np.add(log_null, log_alt[2 - c], out=log_null, where=code == c)
    del code
    groups, best = _group_running_max(group, log_null)
    _fold(evidence, groups // n_contenders, best)


def _fold(evidence: FloatArray, voters: IntArray, best: FloatArray) -> None:
    """evidence[v] = max(evidence[v], best of v) for `voters` sorted ascending."""
    starts = np.flatnonzero(np.r_[True, voters[1:] != voters[:-1]])
    peak = np.maximum.reduceat(best, starts)
    who = voters[starts]
    evidence[who] = np.maximum(evidence[who], peak)


def _group_running_max(group: IntArray, values: FloatArray) -> tuple[IntArray, FloatArray]:
    """For values sorted by group (time order kept inside each group): each
    group's largest prefix sum, i.e. the highest its e-process ever climbed.
    `values` is summed in place (ten million votes: two arrays of 160 MB fewer)."""
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    total = np.cumsum(values, out=values)
    before = np.r_[0.0, total[starts[1:] - 1]]  # the running total where each group begins
    # the group's highest running total, less where it began: rounding is monotone, so this
    # is bit for bit the highest of the entries' own differences, with no array of them
    return group[starts], np.maximum.reduceat(total, starts) - before
