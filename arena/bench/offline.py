"""The offline grader: no model, no network, clearly labelled `offline`.

A place answer (most of Level 1) is matched through the gazetteer, so
GeoNames alternate names and pycountry's translations count as the same
place ("日本" is Japan, "Canton" is Guangzhou), and a more specific place
inside the gold one counts ("Nanning" for "Guangxi"). Places the question
itself names are not credit ("which part of China?" is not answered by
"China"). Naming two places of the gold's kind is a hedge, and wrong.
Other answers (most of Level 2) are compared as numbers (1% tolerance) or
as normalised words, tolerating a misspelt long word.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from difflib import SequenceMatcher

from arena.bench.dataset import Instance
from arena.bench.grades import (
    MAX_EXTRACTED_CHARS,
    OFFLINE_GRADER,
    Grade,
    Run,
    extract_final_answer,
    stated_confidence,
)
from arena.geo.gazetteer import Gazetteer, Match, Place, fold, load_gazetteer

_KIND_ORDER = {"country": 0, "region": 1, "city": 2}
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Words that do not change which answer was given.
_FILLER = frozenset({"the", "a", "an", "of", "in", "city", "province", "county", "district", "and", "at", "is"})


class OfflineGrader:
    name = OFFLINE_GRADER

    def __init__(self, gazetteer: Gazetteer | None = None) -> None:
        self._gazetteer = gazetteer

    async def grade(self, instance: Instance, run: Run) -> Grade:
        return await asyncio.to_thread(self.grade_now, instance, run)

    def grade_now(self, instance: Instance, run: Run) -> Grade:
        if self._gazetteer is None:
            self._gazetteer = load_gazetteer()
        extracted = extract_final_answer(run.answer)
        if extracted is None:
            # no stated final answer: judge the conclusion, the last paragraph, whole
            paragraphs = [p for p in run.answer.strip().split("\n\n") if p.strip()]
            extracted = " ".join(paragraphs[-1].split()) if paragraphs else ""
        correct, why = grade_answer(
            instance.gold, extracted, instance.prompt, self._gazetteer, place_answer=instance.level == 1
        )
        return Grade(
            correct=correct,
            extracted_answer=extracted[:MAX_EXTRACTED_CHARS],
            reasoning=why,
            confidence=stated_confidence(run.answer),
        )


def grade_answer(
    gold: str, answer: str, question: str, gazetteer: Gazetteer, *, place_answer: bool = True
) -> tuple[bool, str]:
    """(correct, a sentence saying why) for one extracted answer. With
    `place_answer` (Level 1: the gold is a location) any place in the gold
    decides; otherwise only a gold made of nothing but place names does
    ("AC Milan" is a club, not Milan)."""
    if not answer.strip():
        return False, "no final answer"
    targets = _target_places(gold, question, gazetteer)
    if targets and not place_answer and not _only_places(gold, gazetteer):
        targets = []
    if targets:
        return _grade_place(targets, answer, gazetteer)
    gold_numbers = _numbers(gold)
    if gold_numbers and len(_words(gold)) <= 2:
        return _grade_number(gold_numbers, answer)
    return _grade_words(gold, answer)


# -- places ---------------------------------------------------------------------


def _target_places(gold: str, question: str, gazetteer: Gazetteer) -> list[Match]:
    """The gold's most specific places, leaving out places the question gives."""
    given = {p.key for m in gazetteer.match(question) for p in m.places}
    named = [_primary(m) for m in gazetteer.match(gold)]
    # a multiple-choice question names the gold too: then it stays
    matches = [m for m in named if not {p.key for p in m.places} <= given] or named
    if not matches:
        return []
    deepest = max(_KIND_ORDER[m.places[0].kind] for m in matches)
    return [m for m in matches if _KIND_ORDER[m.places[0].kind] == deepest]


def _only_places(gold: str, gazetteer: Gazetteer) -> bool:
    rest = fold(gold)
    for match in gazetteer.match(gold):
        rest = rest.replace(fold(match.text), " ")
    return not [w for w in _words(rest) if w not in _FILLER]


def _grade_place(targets: list[Match], answer: str, gazetteer: Gazetteer) -> tuple[bool, str]:
    found = [_primary(m) for m in gazetteer.match(answer)]
    named = " / ".join(t.text for t in targets)
    hits = [m for m in found if any(_within(p, t) for t in targets for p in m.places)]
    if not hits:
        return False, f"the answer does not name {named} or a place inside it"
    # A hedge: two places of the gold's kind, one of them not the gold's.
    kind = targets[0].places[0].kind
    rivals = [
        m
        for m in found
        if m.places[0].kind == kind and m not in hits and not any(_within(p, t) for t in targets for p in m.places)
    ]
    if rivals:
        return False, f"the answer hedges between {hits[0].text} and {rivals[0].text}"
    return True, f"“{hits[0].text}” is {named}" + ("" if _same(hits[0], targets) else " or lies inside it")


def _primary(match: Match) -> Match:
    """A name several places share means the one it is the proper name of
    ("Shaanxi" is also listed as a spelling of Shanxi; it names Shaanxi)."""
    exact = tuple(p for p in match.places if fold(p.name) == fold(match.text))
    if not exact or len(exact) == len(match.places):
        return match
    return Match(match.text, exact, match.quality, match.suffixed)


def _within(place: Place, target: Match) -> bool:
    """The place is one of the target's places, or inside one of them."""
    for goal in target.places:
        if place.key == goal.key:
            return True
        if goal.kind == "country" and place.country_code == goal.country_code and place.kind != "country":
            return True
        if (
            goal.kind == "region"
            and place.kind == "city"
            and place.country_code == goal.country_code
            and place.region
            and fold(place.region) == fold(goal.name)
        ):
            return True
    return False


def _same(match: Match, targets: list[Match]) -> bool:
    keys = {p.key for t in targets for p in t.places}
    return any(p.key in keys for p in match.places)


# -- numbers and words ----------------------------------------------------------


def _numbers(text: str) -> list[float]:
    return [
        float(n.replace(",", ".")) if n.count(",") == 1 and len(n.split(",")[1]) != 3 else float(n.replace(",", ""))
        for n in _NUMBER.findall(text)
    ]


def _grade_number(gold: list[float], answer: str) -> tuple[bool, str]:
    said = _numbers(answer)
    if not said:
        return False, "the answer gives no number"
    value = gold[0]
    if any(abs(n - value) <= max(abs(value) * 0.01, 1e-9) for n in said):
        if len(set(said)) > 3:
            return False, "the answer lists too many numbers to tell which one it gives"
        return True, f"the answer gives {value:g}"
    return False, f"the answer gives {said[0]:g}, not {value:g}"


def _grade_words(gold: str, answer: str) -> tuple[bool, str]:
    want = [w for w in _words(gold) if w not in _FILLER] or _words(gold)
    have = _words(answer)
    if not want:
        return False, "the gold answer has no words to compare"
    missing = [w for w in want if not any(_close(w, h) for h in have)]
    if missing:
        return False, f"the answer lacks “{' '.join(missing)}”"
    return True, "the answer's words match the gold answer"


def _words(text: str) -> list[str]:
    plain = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch))
    plain = re.sub(r"(?<=\w)[.'’](?=\w)", "", plain)  # A.C. -> AC, Xi'an -> Xian
    return _TOKEN.findall(plain)


def _close(want: str, have: str) -> bool:
    if want == have:
        return True
    # one slip in a long word is spelling, not a different answer
    return len(want) >= 5 and SequenceMatcher(None, want, have).ratio() >= 0.85
