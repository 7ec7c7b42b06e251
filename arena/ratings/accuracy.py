"""Accuracy of the contenders on labelled battles, beside human preference.

A labelled battle is one whose uploader shared where the photo was taken.
Each answer's error is the great-circle distance from the point it commits
to (`arena.geo.commitment`) to that label; an answer that commits to no
place is a miss: infinitely far, outside every radius, GeoScore 0, wrong
country. Per contender (IM2GPS's scales, OSV-5M's GeoScore):

* `median_km`, and `within_km` = share within 1 / 25 / 200 / 750 / 2,500 km
  (street / city / region / country / continent);
* `geoscore` = mean of 5000 * exp(-d / 1492.7 km);
* `country_accuracy` = share whose committed country is the label's;
* `no_commitment_rate`.

Each with a percentile bootstrap interval over that contender's labelled
battles (fixed seed). `preference_vs_accuracy` asks whether the votes reward
the right answer: among battles where one answer is clearly closer (2x
closer and at least 25 km nearer), the share of votes for the closer one
(ties and both-bad count half, as in the ratings), overall and per pair.

What is published is held back so that no label can be worked out from it
(docs/security.md): each figure comes from a contender's (or a pair's, or all)
first labelled answers in vote order, counted down to the last milestone of
`Release` (30, then every 10 more), and nothing below the first. Between two
snapshots a figure stays the same or takes in ten answers at once, so no
snapshot, and no difference of two, rests on one label. The distances
themselves are measured from each label's public cell (`export.db.label_truth`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.ratings.bt import FloatArray

# No 1 km radius: every distance is measured from a label's 10 km public cell.
THRESHOLDS_KM = (25, 200, 750, 2500)
GEOSCORE_MAX = 5000.0
GEOSCORE_SCALE_KM = 1492.7
CLEARLY_CLOSER_RATIO = 2.0
CLEARLY_CLOSER_GAP_KM = 25.0
_CHUNK = 32  # bootstrap rounds drawn at once: bounds memory at 32 x battles


@dataclass(frozen=True)
class Release:
    """How many of a group's labelled answers (or votes) a published figure is computed
    from: none below `minimum`, then the first `minimum`, `minimum + step`, ... in vote
    order, so the figure changes only when `step` more have come in."""

    minimum: int = 30
    step: int = 10

    def count(self, available: int) -> int:
        if available < self.minimum:
            return 0
        return self.minimum + (available - self.minimum) // self.step * self.step

    def describe(self) -> dict[str, int]:
        return {"minimum": self.minimum, "step": self.step}


PUBLIC = Release()
EVERY_ANSWER = Release(minimum=1, step=1)  # benchmarks and tests of the maths, never a snapshot


@dataclass(frozen=True)
class LabelledVote:
    """One rated vote on a labelled battle, reduced to what accuracy needs."""

    model_a: str
    model_b: str
    outcome: float  # side a's score: 1, 0 or 0.5 (tie, both bad)
    error_km_a: float | None  # None: the answer commits to no place
    error_km_b: float | None
    country_hit_a: bool | None = None  # None: not known (an export without answer countries)
    country_hit_b: bool | None = None
    country: str | None = None  # the label's ISO alpha-2, for the coverage map
    precision_km: float = 0.0  # how precise the label is (a typed country: 750 km)


def coverage(votes: Sequence[LabelledVote]) -> dict[str, int]:
    """Rated votes on labelled battles per label country, most first."""
    counts: dict[str, int] = defaultdict(int)
    for v in votes:
        if v.country:
            counts[v.country] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def geoscore(distance_km: float | None) -> float:
    """OSV-5M's GeoScore: 5000 at the spot, ~1839 at 1,493 km, 0 for no answer."""
    if distance_km is None or not math.isfinite(distance_km):
        return 0.0
    return GEOSCORE_MAX * math.exp(-distance_km / GEOSCORE_SCALE_KM)


def accuracy_section(
    votes: Sequence[LabelledVote],
    *,
    rounds: int = 100,
    seed: int = 0,
    level: float = 0.95,
    release: Release = PUBLIC,
) -> dict[str, dict[str, Any]]:
    """Per contender with enough labelled answers, sorted by name: the metrics above,
    from the first `release.count(...)` of its labelled answers (in the votes' order)."""
    errors: dict[str, list[float]] = defaultdict(list)
    hits: dict[str, list[float]] = defaultdict(list)
    precision: dict[str, list[float]] = defaultdict(list)
    for v in votes:
        for name, err, hit in (
            (v.model_a, v.error_km_a, v.country_hit_a),
            (v.model_b, v.error_km_b, v.country_hit_b),
        ):
            errors[name].append(math.inf if err is None else float(err))
            hits[name].append(0.0 if err is None else (math.nan if hit is None else float(hit)))
            precision[name].append(float(v.precision_km or 0.0))
    rng = np.random.default_rng(seed)
    section = {}
    for name in sorted(errors):
        used = release.count(len(errors[name]))
        if used:
            section[name] = contender_accuracy(
                np.asarray(errors[name][:used]),
                np.asarray(hits[name][:used]),
                rng,
                rounds,
                level,
                np.asarray(precision[name][:used]),
            )
    return section


def waiting(votes: Sequence[LabelledVote], release: Release = PUBLIC) -> list[str]:
    """Contenders with labelled answers, but too few yet for any figure."""
    counts: dict[str, int] = defaultdict(int)
    for v in votes:
        counts[v.model_a] += 1
        counts[v.model_b] += 1
    return sorted(name for name, n in counts.items() if not release.count(n))


def contender_accuracy(
    errors_km: FloatArray,
    country_hits: FloatArray,
    rng: np.random.Generator,
    rounds: int,
    level: float,
    precision_km: FloatArray | None = None,
) -> dict[str, Any]:
    """The metrics of one contender's answers (inf = no place, nan hit = unknown).

    A radius counts only labels at least that precise: a photo labelled with a
    typed country (750 km) says nothing about being within 25 km of it."""
    n = int(errors_km.size)
    known_hits = country_hits[~np.isnan(country_hits)]
    finite = np.isfinite(errors_km)
    scores = np.where(finite, GEOSCORE_MAX * np.exp(-np.where(finite, errors_km, 0.0) / GEOSCORE_SCALE_KM), 0.0)
    boot = _Bootstrap(n, rng, rounds, level)
    out: dict[str, Any] = {
        "labelled": n,
        "committed": int(finite.sum()),
        "no_commitment_rate": boot.interval(np.isinf(errors_km).astype(np.float64), _mean),
        "median_km": boot.interval(errors_km, _median, digits=0),
        "within_km": {str(t): _within(errors_km, precision_km, t, boot, rng, rounds, level) for t in THRESHOLDS_KM},
        "geoscore": boot.interval(scores, _mean, digits=0),
        "country_accuracy": None,
    }
    if known_hits.size == n:  # every answer's country is known
        out["country_accuracy"] = boot.interval(country_hits, _mean)
    elif known_hits.size:
        sub = _Bootstrap(int(known_hits.size), rng, rounds, level)
        out["country_accuracy"] = sub.interval(known_hits, _mean) | {"of": int(known_hits.size)}
    return out


def _within(
    errors_km: FloatArray,
    precision_km: FloatArray | None,
    radius: float,
    boot: _Bootstrap,
    rng: np.random.Generator,
    rounds: int,
    level: float,
) -> dict[str, Any]:
    hit = (errors_km <= radius).astype(np.float64)
    if precision_km is None or bool((precision_km <= radius).all()):
        return boot.interval(hit, _mean)
    usable = hit[precision_km <= radius]
    return _Bootstrap(int(usable.size), rng, rounds, level).interval(usable, _mean) | {"of": int(usable.size)}


def preference_vs_accuracy(
    votes: Sequence[LabelledVote],
    *,
    ratio: float = CLEARLY_CLOSER_RATIO,
    min_gap_km: float = CLEARLY_CLOSER_GAP_KM,
    rounds: int = 100,
    seed: int = 0,
    level: float = 0.95,
    release: Release = PUBLIC,
) -> dict[str, Any] | None:
    """Share of the votes that went to the clearly closer answer, from the first
    `release.count(...)` labelled votes (overall, and per pair from the pair's own);
    None before there are enough."""
    used = release.count(len(votes))
    if not used:
        return None
    clear = _clear([(_pair(v), v) for v in votes[:used]], ratio, min_gap_km)
    rng = np.random.default_rng(seed + 7)
    section: dict[str, Any] = {
        "rule": f"one answer at least {ratio:g}x closer and {min_gap_km:g} km nearer than the other; "
        "ties and both-bad count half",
        "labelled_votes": used,
        "clear_votes": len(clear),
        **_share([s for _, s in clear], rng, rounds, level),
        "by_pair": [],
    }
    of_pair: dict[tuple[str, str], list[LabelledVote]] = defaultdict(list)
    for v in votes:
        of_pair[_pair(v)].append(v)
    for pair in sorted(of_pair):
        taken = of_pair[pair][: release.count(len(of_pair[pair]))]
        if not taken:
            continue
        scores = [s for _, s in _clear([(pair, v) for v in taken], ratio, min_gap_km)]
        section["by_pair"].append(
            {"pair": list(pair), "labelled_votes": len(taken), "clear_votes": len(scores)}
            | _share(scores, rng, rounds, level)
        )
    return section


def _pair(v: LabelledVote) -> tuple[str, str]:
    first, second = sorted((v.model_a, v.model_b))
    return first, second


def _clear(
    votes: Sequence[tuple[tuple[str, str], LabelledVote]], ratio: float, min_gap_km: float
) -> list[tuple[tuple[str, str], float]]:
    """(pair, score of the closer side) of each vote where one answer is clearly closer."""
    clear = []
    for pair, v in votes:
        if v.error_km_a is None or v.error_km_b is None:
            continue  # both must commit: "closer than nothing" says little about the votes
        near, far = sorted((v.error_km_a, v.error_km_b))
        if far < ratio * near or far - near < min_gap_km:
            continue
        closer_is_a = v.error_km_a < v.error_km_b
        clear.append((pair, v.outcome if closer_is_a else 1.0 - v.outcome))
    return clear


def _share(scores: list[float], rng: np.random.Generator, rounds: int, level: float) -> dict[str, Any]:
    values = np.asarray(scores, dtype=np.float64)
    return {
        "closer_won": int((values == 1.0).sum()),
        "farther_won": int((values == 0.0).sum()),
        "ties": int((values == 0.5).sum()),
        "share_for_closer": _Bootstrap(int(values.size), rng, rounds, level).interval(values, _mean)
        if values.size
        else None,
    }


def _mean(samples: FloatArray) -> FloatArray:
    return np.asarray(samples.mean(axis=-1), dtype=np.float64)


def _median(samples: FloatArray) -> FloatArray:
    return np.median(samples, axis=-1)


class _Bootstrap:
    """Percentile intervals by resampling one contender's battles, in chunks."""

    def __init__(self, n: int, rng: np.random.Generator, rounds: int, level: float) -> None:
        self.n, self.rng, self.rounds, self.tail = n, rng, max(2, rounds), (1 - level) / 2

    def interval(self, values: FloatArray, statistic: Any, digits: int = 4) -> dict[str, float | None]:
        if self.n == 0:
            return {"value": None, "ci_low": None, "ci_high": None}
        point = float(statistic(values))
        draws = []
        for start in range(0, self.rounds, _CHUNK):
            size = min(_CHUNK, self.rounds - start)
            draws.append(statistic(values[self.rng.integers(0, self.n, (size, self.n))]))
        sampled = np.concatenate(draws)
        # no interpolation between order statistics: a median can be infinite
        low = float(np.quantile(sampled, self.tail, method="lower"))
        high = float(np.quantile(sampled, 1 - self.tail, method="higher"))
        return {
            "value": _finite(point, digits),
            "ci_low": _finite(low, digits),
            "ci_high": _finite(high, digits),
        }


def _finite(x: float, digits: int) -> float | None:
    """JSON has no infinity: a median that is a miss (most answers named no place) is null."""
    return round(x, digits) if math.isfinite(x) else None
