"""From text read off a photo to ranked places: script priors + gazetteer evidence.

Each country's score is its script prior plus the evidence of the place names
read in the photo. A name shared by several places (three Zhongshans, Moscow
in Russia and in Idaho) spreads its evidence over them, favouring populous
places and places the script already points to. Scores are heuristic
weights, not calibrated probabilities, and the answer says so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from arena.geo.gazetteer import Gazetteer, Match, Place, fold
from arena.geo.scripts import ScriptReport, detect_scripts

EvidenceSource = Literal["photo", "question"]

_KIND_WEIGHT = {"country": 3.0, "region": 2.0, "city": 1.0}
_SOURCE_WEIGHT = {"photo": 1.0, "question": 0.5}
_PLACES_PER_NAME = 5
_UNEXPLAINED = 0.5  # weight left for "somewhere else", so one weak clue is not 100%


@dataclass(frozen=True)
class TextLine:
    """One line of text with the reader's confidence (1.0 for typed text)."""

    text: str
    confidence: float = 1.0


@dataclass(frozen=True)
class Evidence:
    """A place name found in a line, and how much it weighs."""

    match: Match
    line: str
    confidence: float
    source: EvidenceSource
    weight: float  # quality x confidence x source weight


@dataclass
class Candidate:
    """A country with the most specific place the evidence supports."""

    country: Place
    place: Place  # a city or region inside the country, or the country itself
    score: float
    share: float = 0.0
    reasons: list[str] = field(default_factory=list)

    @property
    def point(self) -> tuple[float, float] | None:
        for p in (self.place, self.country):
            if p.lat is not None and p.lon is not None:
                return p.lat, p.lon
        return None

    @property
    def point_is_country_centre(self) -> bool:
        return self.place.lat is None or self.place.kind == "country"


@dataclass
class Ranking:
    scripts: ScriptReport
    evidence: list[Evidence]
    candidates: list[Candidate]
    ignored_lines: list[TextLine]  # read, but below the confidence needed for matching

    @property
    def certainty(self) -> Literal["none", "low", "medium", "high"]:
        if not self.candidates:
            return "none"
        top = self.candidates[0]
        strong = any(e.weight >= 0.5 and e.source == "photo" for e in self.evidence)
        if top.share >= 0.6 and strong:
            return "high"
        if top.share >= 0.35 and (strong or self.scripts.priors):
            return "medium"
        return "low"


def rank_places(
    lines: Sequence[TextLine],
    gazetteer: Gazetteer,
    *,
    question: str = "",
    min_confidence: float = 0.6,
    prior_weight: float = 1.0,
    top: int = 3,
) -> Ranking:
    """Rank countries (and the best place inside each) from text lines."""
    usable = [ln for ln in lines if ln.confidence >= min_confidence]
    ignored = [ln for ln in lines if ln.confidence < min_confidence]
    scripts = detect_scripts("\n".join(ln.text for ln in usable))
    evidence = [
        Evidence(m, ln.text, ln.confidence, "photo", m.quality * ln.confidence)
        for ln in usable
        for m in gazetteer.match(ln.text)
    ]
    if question:
        # The question may name the country ("which city in western China");
        # regions and countries only, and at half weight: it is a hint, not a reading.
        evidence += [
            Evidence(m, question, 1.0, "question", m.quality * _SOURCE_WEIGHT["question"])
            for m in gazetteer.match(question)
            if m.places and m.places[0].kind != "city"
        ]
    return Ranking(scripts, evidence, _score(scripts, evidence, gazetteer, prior_weight, top), ignored)


# -- scoring ------------------------------------------------------------------------


def _score(
    scripts: ScriptReport, evidence: list[Evidence], gazetteer: Gazetteer, prior_weight: float, top: int
) -> list[Candidate]:
    priors = scripts.priors
    country_score: dict[str, float] = defaultdict(float)
    reasons: dict[str, list[tuple[float, str]]] = defaultdict(list)
    place_score: dict[str, float] = defaultdict(float)
    places: dict[str, Place] = {}

    hint = ", ".join(scripts.hints) or ", ".join(scripts.counts)
    for cc, weight in priors.items():
        country_score[cc] += prior_weight * weight
        reasons[cc].append((prior_weight * weight, f"script prior {weight:.2f} ({hint})"))

    for ev in evidence:
        shares = _spread(ev.match.places[:_PLACES_PER_NAME], priors)
        for place, share in shares:
            amount = ev.weight * share
            country_score[place.country_code] += amount
            place_score[place.key] += amount
            places[place.key] = place
            where = "the question" if ev.source == "question" else "the photo"
            reasons[place.country_code].append(
                (amount, f"“{ev.match.text}” in {where} names {place.label()} ({place.kind}) +{amount:.2f}")
            )

    ranked = sorted(country_score.items(), key=lambda kv: -kv[1])
    total = sum(country_score.values()) + _UNEXPLAINED
    candidates: list[Candidate] = []
    for cc, score in ranked[:top]:
        country = gazetteer.country(cc)
        if country is None or score <= 0:
            continue
        inside = [places[k] for k in place_score if places[k].country_code == cc and places[k].kind != "country"]
        support = _with_region_support(inside, place_score)
        best = max(inside, key=lambda p: (support[p.key], p.kind == "city"), default=country)
        ordered = [text for _, text in sorted(reasons[cc], key=lambda r: -r[0])]
        candidates.append(Candidate(country, best, round(score, 3), round(score / total, 3), ordered))
    return candidates


def _with_region_support(inside: list[Place], place_score: dict[str, float]) -> dict[str, float]:
    """A city read in a region that was also read ("吉林省长春市", or "São Paulo"
    naming both the state and the city) carries the region's evidence too, so
    the answer names the most specific place the text supports."""
    regions = {fold(p.name): place_score[p.key] for p in inside if p.kind == "region"}
    return {p.key: place_score[p.key] + (regions.get(fold(p.region), 0.0) if p.kind == "city" else 0.0) for p in inside}


def _spread(places: Sequence[Place], priors: dict[str, float]) -> list[tuple[Place, float]]:
    """How one name's evidence divides over the places that bear it."""
    raw = [
        _KIND_WEIGHT[p.kind] * math.log10(p.population + 10) * (1.0 + 3.0 * priors.get(p.country_code, 0.0))
        for p in places
    ]
    total = sum(raw)
    if total <= 0:
        return []
    return [(p, r / total) for p, r in zip(places, raw, strict=True)]
