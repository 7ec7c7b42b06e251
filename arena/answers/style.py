"""Style counts of an answer: what a reader sees before reading.

`style_features(text)` counts length, list items, headers, emphasis and GPS
coordinate mentions. Markdown is counted outside fenced code blocks (and
outside inline code spans), so a code listing full of `#` comments is not a
wall of headers.

Length is counted with a regex tokenizer, since no model tokenizer ships
with the arena: a token is a run of letters/digits (`\\w+` without CJK), a
single CJK ideograph, kana or Hangul syllable, or a single punctuation mark.
For English this lands within ~25% of a BPE token count, and it is the
same count for every contender, which is what the style fit needs.
"""

from __future__ import annotations

import math
import re
from typing import Any

FEATURES = ("length", "list", "header", "emphasis", "gps")

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
TOKEN = re.compile(rf"[{CJK}]|[^\W{CJK}]+|[^\w\s]")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADER = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)", re.MULTILINE)
ORDERED = re.compile(r"^[ \t]*\d{1,9}[.)][ \t]+\S", re.MULTILINE)
UNORDERED = re.compile(r"^[ \t]*[-*+][ \t]+\S", re.MULTILINE)
LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+", re.MULTILINE)
INLINE_CODE = re.compile(r"(`+)[^`]*?\1")
# Bold: an opening marker before a non-space, then the nearest closing marker
# after a non-space on the same line (see `_bold_spans`).
BOLD_STARS = (re.compile(r"\*\*(?=\S)"), re.compile(r"(?<=\S)\*\*"))
BOLD_UNDERSCORES = (re.compile(r"(?<!\w)__(?=\S)"), re.compile(r"(?<=\S)__(?!\w)"))
ITALIC_STAR = re.compile(r"(?<![*\w])\*(?=[^\s*])[^*\n]*?(?<=[^\s*])\*(?![*\w])")
ITALIC_UNDERSCORE = re.compile(r"(?<![_\w])_(?=[^\s_])[^_\n]*?(?<=[^\s_])_(?![_\w])")

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


def style_features(text: str) -> dict[str, Any]:
    """Counts for one answer, keyed like Chatbot Arena's `conv_metadata`.

    >>> style_features("## Paris\\n- **Eiffel** tower at 48.8584° N, 2.2945° E")["gps_count"]
    1
    """
    # Each pattern runs only when its marker character is present: the rating
    # job counts every answer in the database, so skipped passes add up.
    prose = _outside_fences(text) if ("```" in text or "~~~" in text) else text
    no_code = INLINE_CODE.sub(" ", prose) if "`" in prose else prose
    headers = [0] * 6
    if "#" in no_code:
        for match in HEADER.finditer(no_code):
            headers[len(match.group(1)) - 1] += 1
    bold = {"**": 0, "__": 0}
    italic = {"*": 0, "_": 0}
    if "*" in no_code or "_" in no_code:
        body = LIST_MARKER.sub("", no_code)
        stars = _bold_spans(body, BOLD_STARS) if "**" in body else []
        bold["**"] = len(stars)
        bold["__"] = len(_bold_spans(body, BOLD_UNDERSCORES)) if "__" in body else 0
        unstarred = _blank_spans(body, stars)
        unbolded = _blank_spans(unstarred, _bold_spans(unstarred, BOLD_UNDERSCORES)) if "__" in unstarred else unstarred
        italic["*"] = len(ITALIC_STAR.findall(unbolded)) if "*" in unbolded else 0
        italic["_"] = len(ITALIC_UNDERSCORE.findall(unbolded)) if "_" in unbolded else 0
    return {
        "tokens": TOKEN.subn("", text)[1],
        "header_count": {f"h{i + 1}": count for i, count in enumerate(headers)},
        "list_count": {
            "ordered": len(ORDERED.findall(no_code)),
            "unordered": len(UNORDERED.findall(no_code)),
        },
        "bold_count": bold,
        "italic_count": italic,
        "gps_count": count_gps(prose),
    }


def feature_vector(counts: dict[str, Any]) -> tuple[float, float, float, float, float]:
    """The five style features (FEATURES order) from `style_features` counts."""
    return (
        float(counts.get("tokens", 0)),
        float(sum(counts.get("list_count", {}).values())),
        float(sum(counts.get("header_count", {}).values())),
        float(sum(counts.get("bold_count", {}).values()) + sum(counts.get("italic_count", {}).values())),
        float(counts.get("gps_count", 0)),
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


def _bold_spans(text: str, markers: tuple[re.Pattern[str], re.Pattern[str]]) -> list[tuple[int, int]]:
    """(start, end) of each bold span, left to right, in linear time.

    What the lazy pattern `open [^\\n]+? close` finds, without its cost: that
    pattern rescans the rest of the line from every opener that never closes
    ("**a **a **a ..."), quadratic in the line's length. Here the nearest
    closer is searched once and reused while it still lies ahead, and a line
    whose nearest closer is past its end is skipped whole (any later opener on
    it would find the same or a later closer).
    """
    opener, closer = markers
    spans: list[tuple[int, int]] = []
    pos = 0
    close: re.Match[str] | None = None
    line_end = -1
    while (found := opener.search(text, pos)) is not None:
        start = found.start()
        if close is None or close.start() < start + 3:  # at least one character inside
            close = closer.search(text, start + 3)
            if close is None:
                break  # no closer anywhere ahead: no later opener closes either
        if line_end < start:
            line_end = text.find("\n", start)
            if line_end == -1:
                line_end = len(text)
        if close.start() > line_end:
            pos = line_end + 1
            continue
        spans.append((start, close.end()))
        pos = close.end()
    return spans


def _blank_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with each span replaced by one space."""
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts.append(text[last:start])
        parts.append(" ")
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _outside_fences(text: str) -> str:
    """The text with fenced code blocks (``` or ~~~) removed; an unclosed
    fence runs to the end, as in CommonMark."""
    kept: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            kept.append(line)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not line.strip()[len(match.group(1)) :].strip():
            fence = None
    return "\n".join(kept)


def _plausible(lat: str, lon: str) -> bool:
    try:
        la = float(lat.replace("−", "-"))
        lo = float(lon.replace("−", "-"))
    except ValueError:
        return False
    return math.isfinite(la) and math.isfinite(lo) and abs(la) <= 90 and abs(lo) <= 180
