"""The policy's two questions, each learnt by a head of the offline model.

`policy.py` takes a prompt when it asks about *the place in the photo*: two
things at once. The photo is in play (the question points at it: "this",
"here", "in the picture") and the question is about a place (where it is,
its country, climate, food, history). One logistic regression over words
cannot learn that AND from words each half shares with a refusal: "this
photo" is in every refusal about a photo's dog, "traditional food" in every
quiz about Italy. So each facet is learnt by a head of its own, from the
sources whose rows all answer it the same way, and the model takes a prompt
when both heads do (model.py: the lower of the two logits).

A source whose rows answer a facet both ways (XQuAD's Wikipedia questions
are about places and about chemistry; the first arena's refusals mix photo
questions with chat) has its rows' answers read one by one, in
`data/facets.jsonl`; a facet still `None` there teaches the other head only.
Every row's facets agree with its label (tests check it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from gatekeeper_build.corpus import DATA_DIR, LabelledPrompt

FACETS_PATH = DATA_DIR / "facets.jsonl"


@dataclass(frozen=True)
class Facet:
    name: str
    of: Callable[[LabelledPrompt], bool | None]  # the row's answer, or None: not known from its source


# source prefix -> (photo in play, about a place); the longest prefix that matches counts
SOURCES: dict[str, tuple[bool | None, bool | None]] = {
    "geoarena-authored:geo-": (True, True),
    "geoarena-authored:not-geo-photo": (True, False),
    "geoarena-authored:not-geo-other": (False, False),
    "geoarena-authored:quiz": (False, True),
    "geoarena-augmented:geo-place-templates": (True, True),
    "geoarena-augmented:quiz-place-templates": (False, True),
    # place words stuffed before a request: the request decides what it is about; a stuffed
    # quiz is about a place, but would teach the place head that the stuffing is a sign of one
    "geoarena-augmented:stuffing-not-geo-photo": (True, False),
    "geoarena-augmented:stuffing-not-geo-other": (False, False),
    "geoarena-augmented:stuffing-quiz": (False, None),
    "geoarena-forms:": (True, True),  # every form's `-place` rows
    "geoarena-forms:preamble-photo": (True, False),
    "geoarena-forms:choice-photo": (True, False),
    "geoarena-forms:photo-other-photo": (True, False),
    "geoarena-forms:photo-other-chat": (False, False),
    # a quiz with options or a chain of facts names places, or numbers: its place facet is not known
    "geoarena-forms:choice-quiz": (False, None),
    "geoarena-forms:chain-quiz": (False, True),
    "geoarena-v1:geo": (True, True),
    "geoarena-v1:not-geo": (None, None),
    "xgqa:": (True, False),
    "xquad:": (False, None),
    "mhumaneval:": (False, False),
    "chatterbot-corpus:": (False, False),
}
# chatterbot-corpus topics whose questions are often about a place ("What is the capital of ...?")
_PLACE_CHAT = {"history", "history_brasil", "origen", "politics", "traveling", "trivia"}


def facets_of(row: LabelledPrompt) -> tuple[bool | None, bool | None]:
    """(photo in play, about a place) as the row's own answers (`data/facets.jsonl`) or else
    its source says; KeyError for an unknown source."""
    by_row = row_answers()
    own = by_row.get(row.group) if row.group else by_row.get(row_key(row.lang, row.source, row.prompt))
    if own is not None:
        return own
    prefix = max((p for p in SOURCES if row.source.startswith(p)), key=len, default=None)
    if prefix is None:
        raise KeyError(f"{row.source!r}: no facets for this source in facets.SOURCES")
    photo, place = SOURCES[prefix]
    if prefix == "chatterbot-corpus:" and row.source.split(":", 1)[1] in _PLACE_CHAT:
        place = None
    return photo, place


@cache
def row_answers() -> dict[str, tuple[bool | None, bool | None]]:
    """The answers read row by row: a line of `data/facets.jsonl` names a translation group (its
    answers hold in every language) or a row by its language, source and prompt."""
    answers = {}
    for line in FACETS_PATH.read_text("utf-8").splitlines():
        item = json.loads(line)
        key = item.get("group") or row_key(item["lang"], item["source"], item["prompt"])
        answers[key] = (item["photo"], item["place"])
    return answers


def row_key(lang: str, source: str, prompt: str) -> str:
    """How `row_answers` names a row that belongs to no translation group."""
    return f"{lang}\t{source}\t{prompt}"


PHOTO = Facet("photo", lambda row: facets_of(row)[0])
PLACE = Facet("place", lambda row: facets_of(row)[1])
POLICY = (PHOTO, PLACE)
# The label itself, as one head: a model that learns "geographic" directly (tests' small fits)
LABEL = Facet("geographic", lambda row: row.geographic)
