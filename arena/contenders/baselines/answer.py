"""The baseline's answer in markdown, as a list of paragraphs to stream.

The answer shows its evidence (what was read, in which script, which
gazetteer entries matched, why the ranking) and says plainly that it is a
baseline that reasons from text alone, so a voter can judge it fairly.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.geo.gazetteer import country_display_name
from arena.geo.ranking import Candidate, Ranking, TextLine
from arena.geo.scripts import detect_scripts

MAX_LINES_SHOWN = 12
MAX_REASONS_SHOWN = 4
# What the shipped recognition model (PP-OCRv4, Chinese dictionary) can read.
OCR_COVERAGE = (
    "its OCR reads Chinese characters and the Latin alphabet only: "
    "Korean, Japanese kana, Cyrillic, Thai or Arabic signs are invisible to it."
)

BASELINE_NOTE = (
    "> **Baseline contender** (offline OCR + GeoNames gazetteer, no vision-language "
    "model): I reason only from the text I can read in the photo{views}."
)


def render_answer(ranking: Ranking, lines: Sequence[TextLine], *, views: int = 1) -> list[str]:
    """Markdown paragraphs, in the order they should stream."""
    note = BASELINE_NOTE.format(views=f", read in {views} views of it" if views > 1 else "")
    if not lines:
        return [note, _no_text(ranking)]
    paragraphs = [note, _verdict(ranking), _what_i_read(lines)]
    if ranking.scripts.counts:
        paragraphs.append(_scripts(ranking))
    paragraphs.append(_matches(ranking))
    if ranking.candidates:
        paragraphs.append(_candidates(ranking.candidates))
    paragraphs.append(_caveat(ranking))
    return paragraphs


def format_point(lat: float, lon: float) -> str:
    """`26.2500° N, 105.9333° E`."""
    return f"{abs(lat):.4f}° {'N' if lat >= 0 else 'S'}, {abs(lon):.4f}° {'E' if lon >= 0 else 'W'}"


# -- paragraphs -------------------------------------------------------------------


def _no_text(ranking: Ranking) -> str:
    text = (
        "**I can't place this photo.** I found no legible text in it, and without "
        f"text this baseline has no evidence to go on. (Note that {OCR_COVERAGE})"
    )
    named = [e.match.places[0].label() for e in ranking.evidence if e.source == "question"]
    if named:
        text += (
            f" Your question mentions {', '.join(dict.fromkeys(named))}; I can't confirm or refine that from the image."
        )
    return text


def _verdict(ranking: Ranking) -> str:
    if not ranking.candidates:
        return (
            "**I can't place this photo.** The text I read names no place I know, and "
            "its script is written too widely to point anywhere."
        )
    top = ranking.candidates[0]
    where = _where(top)
    return f"**Best guess: {top.place.label()}**{where} · certainty: **{ranking.certainty}**."


def _what_i_read(lines: Sequence[TextLine]) -> str:
    shown = sorted(lines, key=lambda ln: -ln.confidence)[:MAX_LINES_SHOWN]
    items = []
    for ln in shown:
        scripts = ", ".join(detect_scripts(ln.text).counts) or "digits/symbols"
        items.append(f"- `{_code(ln.text)}` ({scripts}; confidence {ln.confidence:.2f})")
    more = len(lines) - len(shown)
    if more > 0:
        items.append(f"- … and {more} more line{'s' if more > 1 else ''}")
    chars = sum(len(ln.text) for ln in lines)
    return f"### What I read\n{len(lines)} line{'s' if len(lines) != 1 else ''}, {chars} characters:\n\n" + "\n".join(
        items
    )


def _scripts(ranking: Ranking) -> str:
    report = ranking.scripts
    counts = ", ".join(f"{script} ({n})" for script, n in report.counts.items())
    text = f"### Script\nLetters by script: {counts}."
    if report.hints:
        text += " " + "; ".join(report.hints) + "."
    if report.priors:
        top = list(report.priors.items())[:5]
        text += (
            " Where this script is written: " + ", ".join(f"{country_display_name(cc)} {w:.2f}" for cc, w in top) + "."
        )
    else:
        text += " That script is used worldwide, so it gives no prior on its own."
    return text


def _matches(ranking: Ranking) -> str:
    found = [e for e in ranking.evidence if e.source == "photo"]
    if not found:
        return "### Gazetteer matches\nNone of the text names a place in the gazetteer."
    items = []
    for ev in found[:MAX_LINES_SHOWN]:
        place = ev.match.places[0]
        point = f" at {format_point(place.lat, place.lon)}" if place.lat is not None and place.lon is not None else ""
        others = len(ev.match.places) - 1
        also = f"; {others} other place{'s' if others > 1 else ''} share the name" if others else ""
        pop = f", population {place.population:,}" if place.population else ""
        items.append(
            f"- “{ev.match.text}” in `{_code(ev.line)}` → {place.label()} ({place.kind}{pop}){point}"
            f"{also} · match strength {ev.match.quality:.2f}"
        )
    return "### Gazetteer matches\n" + "\n".join(items)


def _candidates(candidates: Sequence[Candidate]) -> str:
    items = []
    for i, cand in enumerate(candidates, 1):
        place = cand.place.label() if cand.place.kind != "country" else cand.country.name
        items.append(f"{i}. **{place}**{_where(cand)} · weight {cand.share:.2f}")
        for reason in cand.reasons[:MAX_REASONS_SHOWN]:
            items.append(f"   - {reason}")
        if len(cand.reasons) > MAX_REASONS_SHOWN:
            items.append(f"   - … {len(cand.reasons) - MAX_REASONS_SHOWN} more clues")
    return "### Candidates\n" + "\n".join(items)


def _caveat(ranking: Ranking) -> str:
    parts = []
    if ranking.candidates and not any(e.source == "photo" for e in ranking.evidence):
        parts.append("The ranking rests on the script alone: no place name was read.")
    if ranking.ignored_lines:
        parts.append(f"{len(ranking.ignored_lines)} low-confidence line(s) were not matched against the gazetteer.")
    parts.append(
        "Weights are heuristic (script prior + gazetteer evidence, favouring populous places), "
        "not calibrated probabilities; this baseline cannot judge scenery, architecture or road markings, "
        f"and {OCR_COVERAGE}"
    )
    return "_" + " ".join(parts) + "_"


def _where(cand: Candidate) -> str:
    point = cand.point
    if point is None:
        return ""
    note = "; country's populated centre" if cand.point_is_country_centre else ""
    return f" ({format_point(*point)}{note})"


def _code(text: str) -> str:
    # OCR output is untrusted: keep it inside inline code, without backticks or newlines.
    return text.replace("`", "'").replace("\n", " ")[:120]
