"""The baseline's answer in markdown, as a list of paragraphs to stream.

Written for a person, in the question's language: the guess (a city with a
point rounded to about a kilometre, or a country as a country), what was
read, why, and the other possibilities; it says plainly that it is a
baseline that reasons from text alone, so a voter can judge it fairly.
No internal score, weight or prior is shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.contenders.baselines.wording import Wording, country_name, language_of, script_name, wording_for
from arena.geo.ranking import Candidate, Ranking, TextLine

MAX_LINES_SHOWN = 12
MAX_OTHERS_SHOWN = 3


def render_answer(ranking: Ranking, lines: Sequence[TextLine], *, views: int = 1, language: str = "en") -> list[str]:
    """Markdown paragraphs, in the order they should stream, in the prompt's `language`
    (ISO 639-1) when the baseline speaks it, else English."""
    language = language_of(language)
    say = wording_for(language)
    note = say.note.format(views=say.views.format(n=views) if views > 1 else "")
    if not lines:
        return [note, _no_text(ranking, say)]
    paragraphs = [note, _verdict(ranking, say, language), _what_i_read(lines, say), _why(ranking, say, language)]
    if len(ranking.candidates) > 1:
        paragraphs.append(_others(ranking.candidates[1:], say, language))
    paragraphs.append(f"_{say.caveat} {say.coverage}_")
    return paragraphs


def format_point(lat: float, lon: float) -> str:
    """`35.69° N, 139.69° E`: two decimals, about a kilometre, as much as a city's name says."""
    return f"{abs(lat):.2f}° {'N' if lat >= 0 else 'S'}, {abs(lon):.2f}° {'E' if lon >= 0 else 'W'}"


# -- paragraphs -------------------------------------------------------------------


def _no_text(ranking: Ranking, say: Wording) -> str:
    text = say.no_text
    named = [e.match.places[0].label() for e in ranking.evidence if e.source == "question"]
    if named:
        text += " " + say.question_names.format(places=say.list_sep.join(dict.fromkeys(named)))
    return f"{text}\n\n_{say.coverage}_"


def _verdict(ranking: Ranking, say: Wording, language: str) -> str:
    if not ranking.candidates:
        return say.no_place
    top = ranking.candidates[0]
    if top.point_is_country_centre or top.point is None:
        # a country is a guess at the country: no point pretends to locate it
        guess = say.best_country.format(country=country_name(top.country.country_code, language))
    else:
        guess = say.best_city.format(place=_place_name(top, language), point=format_point(*top.point))
    return f"{guess} {say.certainty.format(level=say.levels[ranking.certainty])}"


def _what_i_read(lines: Sequence[TextLine], say: Wording) -> str:
    shown = sorted(lines, key=lambda ln: -ln.confidence)[:MAX_LINES_SHOWN]
    items = [f"- `{_code(ln.text)}`" for ln in shown]
    more = len(lines) - len(shown)
    if more > 0:
        items.append(f"- {say.more_lines.format(n=more)}")
    return f"{say.read}\n" + "\n".join(items)


def _why(ranking: Ranking, say: Wording, language: str) -> str:
    items = []
    report = ranking.scripts
    if report.counts:
        scripts = say.list_sep.join(script_name(s, language) for s in report.counts)
        if report.priors:
            countries = say.list_sep.join(country_name(cc, language) for cc in list(report.priors)[:3])
            items.append(say.script_where.format(scripts=scripts, countries=countries))
        else:
            items.append(say.script_anywhere.format(scripts=scripts))
    found = [e for e in ranking.evidence if e.source == "photo"]
    for ev in found[:MAX_LINES_SHOWN]:
        place = ev.match.places[0]
        where = country_name(place.country_code, language) if place.kind == "country" else place.label()
        line = say.names.format(text=_code(ev.match.text), place=where, kind=say.kinds.get(place.kind, place.kind))
        if len(ev.match.places) > 1:
            line += " " + say.shared_name
        items.append(line)
    if not found:
        items.append(say.no_match)
    return f"{say.why}\n" + "\n".join(f"- {item}" for item in items)


def _others(candidates: Sequence[Candidate], say: Wording, language: str) -> str:
    names = [_place_name(c, language) for c in candidates[:MAX_OTHERS_SHOWN]]
    return f"{say.others}\n" + "\n".join(f"- {name}" for name in dict.fromkeys(names))


def _place_name(cand: Candidate, language: str) -> str:
    """A city or region as the gazetteer writes it, with its country in the answer's language."""
    if cand.place.kind == "country":
        return country_name(cand.country.country_code, language)
    label = cand.place.label()
    english, local = cand.country.name, country_name(cand.country.country_code, language)
    return label[: -len(english)] + local if label.endswith(english) else label


def _code(text: str) -> str:
    # OCR output is untrusted: keep it inside inline code, without backticks or newlines.
    return text.replace("`", "'").replace("\n", " ")[:120]
