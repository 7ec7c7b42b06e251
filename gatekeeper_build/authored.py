"""The prompts written for this project (`data/authored/<lang>.txt`), and what is made of them.

Each file has `# <section>` headers and one prompt a line. Geographic sections
start with `geo`; `stuffing` holds place words and the `-templates` sections
hold `{place}` templates, both used only to make more rows: pairs of a
section's questions asked together, the templates filled with country names
in the file's language, and refusals stuffed with place words.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from gatekeeper_build.corpus import DATA_DIR, LabelledPrompt

SEED = 12  # every random choice of the build starts from it: the same inputs give the same files

# The authored files other than English's are written line for line: line k of a section
# says the same in each of them (checked by a test), so (section, k) is a translation group.
PARALLEL_EXCEPT = ("en",)


def authored_rows() -> Iterator[LabelledPrompt]:
    """Our own prompts, `data/authored/<lang>.txt`: `# <section>` headers, one prompt a line."""
    for path in sorted((DATA_DIR / "authored").glob("*.txt")):
        lang = path.stem
        for section, lines in sections(path).items():
            if section == "stuffing" or section.endswith("-templates"):
                continue
            geographic = section.startswith("geo")
            for number, text in enumerate(lines):
                group = "" if lang in PARALLEL_EXCEPT else f"authored:{section}:{number}"
                yield LabelledPrompt(text, geographic, lang, f"geoarena-authored:{section}", group)
        yield from _pairs(path)


def _pairs(path: Path) -> Iterator[LabelledPrompt]:
    """Two questions of one section asked together, as people do ("Where is this? Is it cold
    there in winter?"); kept in their section's source, so a held-out section takes its pairs."""
    for section, lines in sorted(sections(path).items()):
        if section == "stuffing" or section.endswith("-templates") or len(lines) < 2:
            continue
        rng = random.Random(f"{SEED}{path.stem}:{section}")  # a new section leaves the others' pairs as they are
        pairs = [(a, b) for a in lines for b in lines if a != b]
        for a, b in rng.sample(pairs, min(len(pairs), 3 * len(lines))):
            yield LabelledPrompt(f"{a} {b}", section.startswith("geo"), path.stem, f"geoarena-authored:{section}")


# Countries whose names fill the `{place}` templates, in each language by CLDR (babel).
PLACE_CODES = (
    "JP",
    "BR",
    "FR",
    "DE",
    "IN",
    "CN",
    "US",
    "MX",
    "KE",
    "EG",
    "TR",
    "VN",
    "TH",
    "ID",
    "RU",
    "PE",
    "NO",
    "IT",
    "ES",
    "AU",
    "ZA",
    "MA",
    "IR",
    "PL",
    "GR",
    "AR",
    "CA",
    "NG",
    "PH",
    "KR",
)


def place_rows() -> Iterator[LabelledPrompt]:
    """The `{place}` templates of each language filled with country names in that language:
    taken when they ask about the photo, refused when they are a quiz about the country."""
    try:
        from babel import Locale
    except ImportError:
        raise SystemExit("build collect needs babel: pip install -e '.[gatekeeper-build]'") from None

    for path in sorted((DATA_DIR / "authored").glob("*.txt")):
        lang = path.stem
        names = Locale.parse({"tl": "fil"}.get(lang, lang)).territories
        rng = random.Random(f"{SEED}places{lang}")
        for section, lines in sorted(sections(path).items()):
            if not section.endswith("-templates"):
                continue
            geographic = section.startswith("geo")
            for number, template in enumerate(lines):
                for code in rng.sample(PLACE_CODES, 12):
                    yield LabelledPrompt(
                        template.replace("{place}", names[code]),
                        geographic,
                        lang,
                        f"geoarena-augmented:{section}",
                        "" if lang in PARALLEL_EXCEPT else f"places:{section}:{number}:{code}",
                    )


def stuffing_rows() -> Iterator[LabelledPrompt]:
    """Place words stuffed before and after requests that are not about a photo's place: the
    words alone must not carry a prompt through."""
    rng = random.Random(SEED)
    for path in sorted((DATA_DIR / "authored").glob("*.txt")):
        lang = path.stem
        found = sections(path)
        words = " ".join(found.get("stuffing", [])).split()
        others = [(name, line) for name in ("not-geo-photo", "not-geo-other", "quiz") for line in found.get(name, [])]
        if not words or not others:
            continue
        for number in range(24):
            picked = " ".join(rng.sample(words, min(len(words), rng.randint(3, 7))))
            name, request = rng.choice(others)
            sep = rng.choice([": ", ", ", " - ", ". ", " "])
            prompt = f"{picked}{sep}{request}" if number % 3 else f"{request} {picked}"
            # named after the request's section, so the evaluation holds both out together
            yield LabelledPrompt(prompt, False, lang, f"geoarena-augmented:stuffing-{name}")


def sections(path: Path) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = ""
    for line in path.read_text("utf-8").splitlines():
        text = line.strip()
        if text.startswith("# "):
            current = text[2:].strip()
        elif text:
            sections.setdefault(current, []).append(text)
    return sections
