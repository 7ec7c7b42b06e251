"""The leaderboard snapshot: every number the page and `/api/leaderboard` show.

`build_snapshot(log, options)` is pure: a `VoteLog` (votes as arrays) in, a
JSON-ready dict out (vote_log.py makes the log).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from scipy.special import ndtri
from threadpoolctl import threadpool_limits

from arena.answers.style import FEATURES
from arena.geo.cells import CELL_KM
from arena.ratings import anomaly, bt, elo, extended, propensity, robustness, style, ties
from arena.ratings.accuracy import PUBLIC, accuracy_section, coverage, preference_vs_accuracy, waiting
from arena.ratings.bt import POINTS_PER_UNIT, FloatArray, IntArray, Matchups
from arena.ratings.options import CI_METHODS as CI_METHODS
from arena.ratings.options import MIN_CATEGORY_VOTES as MIN_CATEGORY_VOTES
from arena.ratings.options import PROVISIONAL_VOTES as PROVISIONAL_VOTES
from arena.ratings.options import RankOptions as RankOptions  # re-exported: callers build options here
from arena.ratings.vote_log import VoteLog

OUTLIER_REASON = "flagged:outlier_voter"
ADDRESS_OUTLIER_REASON = "flagged:outlier_address"

Progress = Callable[[int], None]


def build_snapshot(
    log: VoteLog,
    options: RankOptions | None = None,
    *,
    excluded: dict[str, int] | None = None,
    computed_at: datetime | None = None,
    progress: Progress | None = None,
    screening: anomaly.Screening | None = None,
) -> dict[str, Any]:
    """The whole snapshot: BT with CIs, style-adjusted BT, Elo, matrices, categories.

    `progress(k)` is told about k finished bootstrap rounds (0 = still busy).
    Votes of voters or addresses the anomaly test flags are left out and
    counted in `excluded` (pass `screening` from `screen_log` to reuse a test
    already run).
    """
    options = options or RankOptions()
    computed_at = computed_at or datetime.now(UTC)
    excluded = dict(excluded or {})
    # The fits solve many small (n x n) systems: a multi-threaded BLAS only
    # adds contention there (100x slower on a busy 2-core host), so one thread.
    with threadpool_limits(limits=1, user_api="blas"):
        if screening is None:
            screening = screen_log(log, options)
        if screening is not None and screening.votes_flagged:
            for reason, count in _outlier_counts(screening).items():
                if count:
                    excluded[reason] = excluded.get(reason, 0) + count
            log = log.without(screening.vote_flagged)
        snapshot = _build(log, options, excluded, computed_at, progress)
    if screening is not None:
        snapshot["voter_screening"] = screening.summary()
    return snapshot


def screen_log(
    log: VoteLog,
    options: RankOptions,
    already_flagged: Collection[str] = (),
    already_flagged_addresses: Collection[str] = (),
) -> anomaly.Screening | None:
    """The anomaly test on a log, under ratings fitted to all of it, by voter
    and (when the log has addresses) by address; None when it is off or no
    vote has a voter. Voters and addresses an earlier run flagged
    (`already_flagged`, `already_flagged_addresses`) lose every vote, new ones
    included."""
    if options.outlier_alpha is None or log.voter is None or log.size == 0 or not (log.voter >= 0).any():
        return None
    alpha = options.outlier_alpha
    with threadpool_limits(limits=1, user_api="blas"):
        theta = bt.fit_bt(bt.aggregate(log.a, log.b, log.outcome, len(log.contenders))).theta
        order = _time_order(log)

        def screen(who: IntArray, names: list[str], flagged_before: Collection[str]) -> anomaly.VoterScreening:
            found = anomaly.screen_voters(log.a, log.b, log.outcome, who, theta, alpha=alpha, order=order)
            return _with_flagged_before(found, who, names, flagged_before)

        by_voter = screen(log.voter, log.voters, already_flagged)
        by_address = None
        if log.address is not None and (log.address >= 0).any():
            by_address = screen(log.address, log.addresses, already_flagged_addresses)
    return anomaly.Screening(by_voter, by_address)


def _with_flagged_before(
    result: anomaly.VoterScreening, who: IntArray, names: list[str], flagged_before: Collection[str]
) -> anomaly.VoterScreening:
    """`result` with the voters (or addresses) in `flagged_before` flagged as well."""
    if not flagged_before:
        return result
    before = set(flagged_before)
    known = np.array([name in before for name in names], dtype=bool)
    if not known.any():
        return result
    is_flagged = known.copy()
    is_flagged[result.flagged] = True
    votes = np.zeros(who.size, dtype=bool)
    has_one = who >= 0
    votes[has_one] = is_flagged[who[has_one]]
    return replace(result, flagged=np.flatnonzero(is_flagged), vote_flagged=votes)


def _outlier_counts(screening: anomaly.Screening) -> dict[str, int]:
    """Excluded votes by reason: a voter's first, then an address's for the rest."""
    by_voter = screening.voters.vote_flagged
    by_address_only = screening.vote_flagged & ~by_voter
    return {OUTLIER_REASON: int(by_voter.sum()), ADDRESS_OUTLIER_REASON: int(by_address_only.sum())}


def _build(
    log: VoteLog,
    options: RankOptions,
    excluded: dict[str, int],
    computed_at: datetime,
    progress: Progress | None,
) -> dict[str, Any]:
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    snapshot: dict[str, Any] = {
        "computed_at": computed_at.isoformat(),
        "votes_used": log.size,
        "excluded": dict(sorted(excluded.items())),
        "method": _method(options),
        "leaderboard": [],
        "style": None,
        "matrices": None,
        "categories": [],
        "gate_uplift": {},
        "position": None,
        "robustness": None,
        "notes": [],
        "timings": timings,
    }
    if log.size == 0:
        snapshot["notes"].append("no votes yet")
        return snapshot
    # contenders that actually appear, in a stable order
    used = _present(len(log.contenders), log.a, log.b)
    names = [log.contenders[i] for i in used]
    remap = np.full(len(log.contenders), -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    a, b = remap[log.a], remap[log.b]
    anchor = _anchor_index(names, options, snapshot["notes"])
    rng = np.random.default_rng(options.seed)

    matchups = bt.aggregate(a, b, log.outcome, len(names))
    fitted = matchups
    if options.inverse_propensity:
        weights, why_not = propensity.inverse_propensity_weights(log.propensity, log.size)
        if weights is None:
            snapshot["notes"].append(str(why_not))
        else:
            fitted = propensity.aggregate_weighted(a, b, log.outcome, len(names), weights)
        snapshot["method"]["inverse_propensity"] = weights is not None
    plain = _fit_with_intervals(fitted, options, anchor, rng, progress)
    if plain.regularized:
        snapshot["notes"].append(
            "someone never lost (or the votes split into groups that never met): "
            "the exact maximum-likelihood ratings do not exist, so a weak prior keeps them finite"
        )
    played, win_rate = _votes_and_win_rate(matchups)
    clock = _lap(timings, "bradley_terry", clock)
    elo_ratings = elo.online_elo(a, b, log.outcome, len(names), order=_time_order(log))
    clock = _lap(timings, "elo", clock)
    snapshot["leaderboard"] = _rows(
        names,
        plain.ratings,
        plain.low,
        plain.high,
        played,
        win_rate,
        log.gate,
        elo_ratings,
        provisional_votes=options.provisional_votes,
    )
    # robustness refits the half-win fit, so it starts from that fit and its order
    theta_half = plain.theta if options.ties == "half" and fitted is matchups else bt.fit_bt(matchups).theta
    settled = [names.index(r["contender"]) for r in snapshot["leaderboard"] if not r["provisional"]]
    settled.sort(key=lambda i: -theta_half[i])
    snapshot["robustness"] = robustness.board_robustness(matchups, theta_half, settled, names, options.robustness_top)
    snapshot["method"]["provisional_votes"] = options.provisional_votes
    clock = _lap(timings, "robustness", clock)
    snapshot["method"]["mle_gradient_norm"] = plain.gradient_norm
    if plain.tie_parameter is not None:
        snapshot["method"]["tie_parameter"] = round(plain.tie_parameter, 6)
    snapshot["matrices"] = _matrices(names, matchups, plain.ratings, snapshot["leaderboard"])

    if options.style and log.features_a is not None and log.features_b is not None:
        snapshot["style"] = _style_section(
            log, a, b, names, anchor, options, plain.regularized, plain.theta, played, win_rate, progress
        )
        # whether the fit is identified enough to show is Snapshot.style_withheld's call, said to visitors there
        clock = _lap(timings, "style", clock)
    elif options.style:
        snapshot["notes"].append("no style features in the input: style-adjusted ratings skipped")

    snapshot["categories"] = _categories(log, a, b, names, options, progress)
    clock = _lap(timings, "categories", clock)
    # what GATE adds per base model and what side A adds (sibling fit, sandwich intervals)
    snapshot.update(extended.sections(matchups, names, log.gate, options.level))
    clock = _lap(timings, "gate_and_position", clock)
    _accuracy_sections(snapshot, log, options)
    _lap(timings, "accuracy", clock)
    return snapshot


def _accuracy_sections(snapshot: dict[str, Any], log: VoteLog, options: RankOptions) -> None:
    """Accuracy on labelled battles beside the votes (arena.ratings.accuracy)."""
    rounds = max(options.rounds, 100)  # cheap: a mean or median per round, even with sandwich BT
    snapshot["accuracy"] = accuracy_section(log.labelled, rounds=rounds, seed=options.seed, level=options.level)
    snapshot["preference_vs_accuracy"] = preference_vs_accuracy(
        log.labelled, rounds=rounds, seed=options.seed, level=options.level
    )
    # how the figures are held back (docs/security.md), and who is still short of the minimum
    snapshot["accuracy_release"] = PUBLIC.describe() | {"cell_km": CELL_KM, "waiting": waiting(log.labelled)}
    snapshot["coverage"] = coverage(log.labelled)  # label country -> rated votes, for the map


def _lap(timings: dict[str, float], name: str, since: float) -> float:
    now = time.perf_counter()
    timings[name] = round(now - since, 4)
    return now


# -- the plain Bradley-Terry section ------------------------------------------


@dataclass
class Intervals:
    theta: FloatArray
    ratings: FloatArray
    low: FloatArray
    high: FloatArray
    regularized: bool
    gradient_norm: float
    tie_parameter: float | None = None  # Davidson's nu


def _fit_with_intervals(
    matchups: Matchups,
    options: RankOptions,
    anchor: int | None,
    rng: np.random.Generator | None,
    progress: Progress | None,
) -> Intervals:
    if options.ties == "davidson":
        return _davidson_intervals(matchups, options, anchor, rng, progress)
    if options.ties == "ignore":
        matchups = ties.drop_ties(matchups)
    full = bt.fit_bt(matchups)
    ratings = full.ratings(anchor, options.anchor_rating)
    if options.ci == "sandwich":
        cov = bt.sandwich_covariance(matchups, full, anchor)
        half = _z(options.level) * POINTS_PER_UNIT * np.sqrt(np.clip(np.diag(cov), 0, None))
        return Intervals(full.theta, ratings, ratings - half, ratings + half, full.regularized, full.gradient_norm)
    rounds = bt.bootstrap_bt(
        matchups, full, options.rounds, rng or np.random.default_rng(options.seed), progress=progress
    )
    sampled = np.stack([bt.to_ratings(t, anchor, options.anchor_rating) for t in rounds])
    low, high = _percentiles(sampled, options.level)
    return Intervals(full.theta, ratings, low, high, full.regularized, full.gradient_norm)


def _davidson_intervals(
    matchups: Matchups,
    options: RankOptions,
    anchor: int | None,
    rng: np.random.Generator | None,
    progress: Progress | None,
) -> Intervals:
    full = ties.fit_davidson(matchups)
    ratings = bt.to_ratings(full.theta, anchor, options.anchor_rating)
    if options.ci == "sandwich":
        cov = ties.sandwich_davidson(matchups, full, anchor)
        half = _z(options.level) * POINTS_PER_UNIT * np.sqrt(np.clip(np.diag(cov), 0, None))
        low, high = ratings - half, ratings + half
    else:
        rounds = ties.bootstrap_davidson(
            matchups, full, options.rounds, rng or np.random.default_rng(options.seed), progress=progress
        )
        low, high = _percentiles(
            np.stack([bt.to_ratings(t, anchor, options.anchor_rating) for t in rounds]), options.level
        )
    return Intervals(full.theta, ratings, low, high, full.regularized, full.gradient_norm, full.nu)


def _votes_and_win_rate(m: Matchups) -> tuple[FloatArray, FloatArray]:
    n = m.n
    played = np.bincount(m.a, m.count, n) + np.bincount(m.b, m.count, n)
    score = np.bincount(m.a, m.count * m.outcome, n) + np.bincount(m.b, m.count * (1 - m.outcome), n)
    return played.astype(np.float64), np.divide(score, played, out=np.zeros(n), where=played > 0)


def _rows(
    names: list[str],
    ratings: FloatArray,
    low: FloatArray,
    high: FloatArray,
    played: FloatArray,
    win_rate: FloatArray,
    gate: dict[str, bool],
    elo_ratings: FloatArray | None = None,
    *,
    provisional_votes: int = 0,
) -> list[dict[str, Any]]:
    """Leaderboard rows sorted by rating; rank = 1 + how many are surely better.
    A contender with fewer than `provisional_votes` votes is `provisional`."""
    ranks = 1 + (low[None, :] > high[:, None]).sum(axis=1)
    rows = []
    for i in np.argsort(-ratings, kind="stable"):
        row: dict[str, Any] = {
            "contender": names[i],
            "rating": round(float(ratings[i]), 3),
            "ci_low": round(float(low[i]), 3),
            "ci_high": round(float(high[i]), 3),
            "rank": int(ranks[i]),
            "votes": int(round(played[i])),
            "win_rate": round(float(win_rate[i]), 4),
            "gate": bool(gate.get(names[i], False)),
            "provisional": bool(played[i] < provisional_votes),
        }
        if elo_ratings is not None:
            row["elo"] = round(float(elo_ratings[i]), 1)
        rows.append(row)
    return rows


def _matrices(names: list[str], m: Matchups, ratings: FloatArray, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Battle counts, observed and predicted win rates (row beats column), in
    leaderboard order; cells with no battles are null."""
    n = m.n
    battles = np.zeros((n, n))
    score = np.zeros((n, n))
    np.add.at(battles, (m.a, m.b), m.count)
    np.add.at(battles, (m.b, m.a), m.count)
    np.add.at(score, (m.a, m.b), m.count * m.outcome)
    np.add.at(score, (m.b, m.a), m.count * (1 - m.outcome))
    order = [names.index(r["contender"]) for r in rows]
    battles = battles[np.ix_(order, order)]
    score = score[np.ix_(order, order)]
    r = ratings[order]
    predicted = 1.0 / (1.0 + bt.BASE ** ((r[None, :] - r[:, None]) / bt.SCALE))
    observed = [
        [round(float(score[i, j] / battles[i, j]), 4) if battles[i, j] > 0 else None for j in range(n)]
        for i in range(n)
    ]
    return {
        "contenders": [names[i] for i in order],
        "battles": battles.astype(int).tolist(),
        "win_rate": observed,
        "predicted_win_rate": np.round(predicted, 4).tolist(),
    }


# -- the style-adjusted section -----------------------------------------------

# No real style effect moves the log-odds of a vote by this much per standard
# deviation (GeoArena's largest is 0.53): a slope this steep is separation.
SEPARATED_STYLE = 10.0


def _style_section(
    log: VoteLog,
    a: IntArray,
    b: IntArray,
    names: list[str],
    anchor: int | None,
    options: RankOptions,
    regularized: bool,
    plain_theta: FloatArray,
    played: FloatArray,
    win_rate: FloatArray,
    progress: Progress | None,
) -> dict[str, Any]:
    assert log.features_a is not None and log.features_b is not None
    z, mean, std = style.standardize(style.style_differences(log.features_a, log.features_b), in_place=True)
    problem = style.StyleProblem(a, b, log.outcome, z, len(names), ridge=bt.SEPARATION_RIDGE if regularized else 0.0)
    del z  # the problem keeps its own copy, in pair order (0.5 GB at ten million votes)
    # warm start from the plain ratings: style moves them only a little
    init = style.StyleFit(plain_theta, np.zeros(problem.k), 0, math.inf)
    full = problem.fit(init=init)
    converged = full.gradient_norm <= 1e-6 * max(1.0, float(log.size))
    # With few votes the style features can separate the outcomes: the slopes
    # run off towards infinity and the optimiser stops on a flat, absurd one.
    separated = not converged or float(np.abs(full.beta).max(initial=0.0)) > SEPARATED_STYLE
    ratings = bt.to_ratings(full.theta, anchor, options.anchor_rating)
    level_z = _z(options.level)
    if options.ci == "sandwich":
        cov = problem.sandwich(full, anchor)
        n = len(names)
        half_theta = level_z * POINTS_PER_UNIT * np.sqrt(np.clip(np.diag(cov)[:n], 0, None))
        half_beta = level_z * np.sqrt(np.clip(np.diag(cov)[n:], 0, None))
        low, high = ratings - half_theta, ratings + half_theta
        beta_low, beta_high = full.beta - half_beta, full.beta + half_beta
        how = "sandwich"
    else:
        thetas, betas, how = problem.bootstrap(
            full, options.rounds, options.seed + 1, exact=options.exact_style_bootstrap, progress=progress
        )
        sampled = np.stack([bt.to_ratings(t, anchor, options.anchor_rating) for t in thetas])
        low, high = _percentiles(sampled, options.level)
        beta_low, beta_high = _percentiles(betas, options.level)
    return {
        "features": list(FEATURES),
        "coefficients": [
            {
                "feature": f,
                "coefficient": round(float(full.beta[i]), 5),
                "ci_low": round(float(beta_low[i]), 5),
                "ci_high": round(float(beta_high[i]), 5),
                "mean": round(float(mean[i]), 6),
                "std": round(float(std[i]), 6),
            }
            for i, f in enumerate(FEATURES)
        ],
        "leaderboard": _rows(
            names, ratings, low, high, played, win_rate, log.gate, provisional_votes=options.provisional_votes
        ),
        "ci_method": how,
        "converged": converged,
        "separated": separated,
        "constant_features": [f for i, f in enumerate(FEATURES) if std[i] == 0],
        "gradient_norm": full.gradient_norm,
        "iterations": full.iterations,
    }


# -- categories ----------------------------------------------------------------


def _categories(
    log: VoteLog,
    a: IntArray,
    b: IntArray,
    names: list[str],
    options: RankOptions,
    progress: Progress | None,
) -> list[dict[str, Any]]:
    """A plain BT leaderboard per category (sandwich intervals); thin ones are
    marked, not hidden."""
    out = []
    for name, rows in sorted(log.categories.items()):
        if rows.size == 0:
            continue
        ca, cb = a[rows], b[rows]
        used = _present(len(names), ca, cb)
        remap = np.full(len(names), -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        sub_names = [names[i] for i in used]
        entry: dict[str, Any] = {
            "name": name,
            "votes": int(rows.size),
            "too_few_votes": bool(rows.size < options.min_category_votes),
            "leaderboard": [],
        }
        if used.size >= 2:
            m = bt.aggregate(remap[ca], remap[cb], log.outcome[rows], used.size)
            anchor = sub_names.index(options.anchor) if options.anchor in sub_names else None
            # sandwich intervals here: a bootstrap per category would multiply the
            # job's time by the number of categories for the same asymptotic answer
            fit = _fit_with_intervals(m, replace(options, ci="sandwich"), anchor, None, None)
            played, win_rate = _votes_and_win_rate(m)
            entry["leaderboard"] = _rows(sub_names, fit.ratings, fit.low, fit.high, played, win_rate, log.gate)
        out.append(entry)
        if progress is not None:
            progress(0)
    return out


# -- small helpers ---------------------------------------------------------------


def _method(options: RankOptions) -> dict[str, Any]:
    return {
        "model": "bradley-terry",
        "base": bt.BASE,
        "scale": bt.SCALE,
        "init": bt.INIT_RATING,
        "ties": ties.DESCRIPTIONS[options.ties],
        "tie_model": options.ties,
        "style_ties": ties.DESCRIPTIONS["half"],
        "ci": options.ci,
        "rounds": options.rounds if options.ci == "bootstrap" else None,
        "level": options.level,
        "seed": options.seed,
        "anchor": options.anchor,
        "anchor_rating": options.anchor_rating if options.anchor else None,
        "elo_k": elo.K_FACTOR,
        "min_category_votes": options.min_category_votes,
        "category_ci": "sandwich",
    }


def _anchor_index(names: list[str], options: RankOptions, notes: list[str]) -> int | None:
    if not options.anchor:
        return None
    if options.anchor not in names:
        notes.append(f"anchor {options.anchor!r} has no votes: ratings are centred on {bt.INIT_RATING:g} instead")
        return None
    return names.index(options.anchor)


def _present(n: int, a: IntArray, b: IntArray) -> IntArray:
    """The contenders (of n) in a or b, ascending: np.unique of both, without its sort."""
    seen = np.zeros(n, dtype=bool)
    seen[a] = True
    seen[b] = True
    return np.flatnonzero(seen)


def _time_order(log: VoteLog) -> IntArray | None:
    """The votes' time order; None (as given) when they are in time order
    already, as an export is: the same order as the stable sort, without it."""
    if log.tstamp is None or log.tstamp.size != log.size:
        return None
    if bool(np.all(log.tstamp[1:] >= log.tstamp[:-1])):
        return None
    return np.argsort(log.tstamp, kind="stable")


def _percentiles(samples: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail], axis=0)
    return low, high


def _z(level: float) -> float:
    """The normal quantile for a two-sided interval (1.96 for 95%)."""
    return float(ndtri(0.5 + level / 2))
