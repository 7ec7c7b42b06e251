"""Style counts of an answer: what a reader sees before reading.

`style_features(text)` counts length, list items, headers, emphasis and GPS
coordinate mentions. `feature_vector` turns those counts into the style fit's
features, plus one that is not in the text: the tool calls behind the answer
(`tool_calls`, the length of a GATE side's trajectory, 0 for a plain one), so
the fit measures what seeing tools used does to a vote instead of leaving it
in the ratings. Markdown is counted on markdown-it's token stream, the
parse the page renders, so code (fenced, indented or inline) never counts as
headers, lists or emphasis.

Length is counted with a regex tokenizer, since no model tokenizer ships
with the arena: a token is a run of letters/digits (`\\w+` without CJK), a
single CJK ideograph, kana or Hangul syllable, or a single punctuation mark.
For English this lands within ~25% of a BPE token count, and it is the
same count for every contender, which is what the style fit needs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from markdown_it.token import Token

from arena.answers.markdown import PARSER

FEATURES = ("length", "list", "header", "emphasis", "gps", "tools")

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
HEADER_TAGS = tuple(f"h{i}" for i in range(1, 7))
TOKEN = re.compile(rf"[{CJK}]|[^\W{CJK}]+|[^\w\s]")

# One coordinate in degrees: decimal or degrees-minutes-seconds, then a hemisphere.
_DEG = r"\d{1,3}(?:[.,]\d+)?\s*°?"
_MIN = r"(?:\s*\d{1,2}(?:\.\d+)?\s*['′’])?"
_SEC = r"(?:\s*\d{1,2}(?:\.\d+)?\s*(?:\"|″|''|”))?"
GPS_HEMISPHERE = re.compile(
    rf"(?<![\w.]){_DEG}{_MIN}{_SEC}\s*[NS]\b[\s,;/]*{_DEG}{_MIN}{_SEC}\s*[EW]\b",
    re.IGNORECASE,
)
# A signed decimal pair: in brackets with any decimals, bare with two or more.
GPS_BRACKETED = re.compile(r"[(\[]\s*([-+−]?\d{1,2}(?:\.\d+)?)\s*,\s*([-+−]?\d{1,3}(?:\.\d+)?)\s*[)\]]")
# Every mention above has a digit then a degree sign or a decimal point: a cheap first look.
GPS_HINT = re.compile(r"\d(?:\s*°|[.,]\d|\s*[NSns]\b)")
GPS_BARE = re.compile(r"(?<![\w.])([-+−]?\d{1,2}\.\d{2,})\s*,\s*([-+−]?\d{1,3}\.\d{2,})(?![\w.])")


def style_features(text: str, tokens: list[Token] | None = None) -> dict[str, Any]:
    """Counts for one answer, keyed like Chatbot Arena's `conv_metadata`, read
    off the same markdown-it parse the page renders (so a `#` inside a code
    block is code, not a header, exactly as the voter sees it).

    >>> style_features("## Paris\\n- **Eiffel** tower at 48.8584° N, 2.2945° E")["gps_count"]
    1
    """
    headers = dict.fromkeys(HEADER_TAGS, 0)
    lists = {"ordered": 0, "unordered": 0}
    bold = {"**": 0, "__": 0}
    italic = {"*": 0, "_": 0}
    prose: list[str] = []  # the text outside code, where GPS mentions count
    kinds: list[str] = []  # the list each list item belongs to, innermost last
    for token in _walk(PARSER.parse(text) if tokens is None else tokens):
        kind = token.type
        if kind == "heading_open":
            headers[token.tag] += 1
        elif kind in ("bullet_list_open", "ordered_list_open"):
            kinds.append("ordered" if kind == "ordered_list_open" else "unordered")
        elif kind in ("bullet_list_close", "ordered_list_close"):
            kinds.pop()
        elif kind == "list_item_open" and kinds:
            lists[kinds[-1]] += 1
        elif kind == "strong_open" and token.markup in bold:
            bold[token.markup] += 1
        elif kind == "em_open" and token.markup in italic:
            italic[token.markup] += 1
        elif kind == "text":
            prose.append(token.content)
        elif kind in ("softbreak", "hardbreak"):
            prose.append("\n")
    return {
        "tokens": TOKEN.subn("", text)[1],
        "header_count": headers,
        "list_count": lists,
        "bold_count": bold,
        "italic_count": italic,
        "gps_count": count_gps(" ".join(prose)),
    }


def feature_vector(counts: dict[str, Any]) -> tuple[float, float, float, float, float, float]:
    """The style features (FEATURES order) from `style_features` counts and
    the side's `tool_calls` (absent: none)."""
    return (
        float(counts.get("tokens", 0)),
        float(sum(counts.get("list_count", {}).values())),
        float(sum(counts.get("header_count", {}).values())),
        float(sum(counts.get("bold_count", {}).values()) + sum(counts.get("italic_count", {}).values())),
        float(counts.get("gps_count", 0)),
        float(counts.get("tool_calls", 0)),
    )


def count_gps(text: str) -> int:
    """Coordinate mentions: `48.8584° N, 2.2945° E`, `48°51′30″N 2°17′40″E`,
    `(48.86, 2.29)`, `-33.8568, 151.2153`. Pairs outside +-90/+-180 are not counted."""
    if not GPS_HINT.search(text):
        return 0
    found = len(GPS_HEMISPHERE.findall(text))
    rest = GPS_HEMISPHERE.sub(" ", text) if found else text
    for pattern in (GPS_BRACKETED, GPS_BARE):
        pairs = pattern.findall(rest)
        found += sum(1 for lat, lon in pairs if _plausible(lat, lon))
        if pairs and pattern is GPS_BRACKETED:
            rest = pattern.sub(" ", rest)  # so a bracketed pair is not counted again bare
    return found


def _plausible(lat: str, lon: str) -> bool:
    try:
        la = float(lat.replace("−", "-"))
        lo = float(lon.replace("−", "-"))
    except ValueError:
        return False
    return math.isfinite(la) and math.isfinite(lo) and abs(la) <= 90 and abs(lo) <= 180


def _walk(tokens: Iterable[Token]) -> Iterator[Token]:
    """Block tokens and, inside each, its inline tokens, in document order."""
    for token in tokens:
        yield token
        if token.children:
            yield from token.children
