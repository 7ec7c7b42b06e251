"""Which writing systems a piece of text uses, and what that says about where.

`detect_scripts` counts letters per script from Unicode ranges; `script_priors`
turns those counts into weights per country (ISO 3166-1 alpha-2). The priors
are deliberately coarse: a script narrows the world, it rarely names a place.
Latin text only gets a prior when it carries a language's tell-tale letters
(ñ, ã, ß, ő, ğ, ...), because plain ASCII is written everywhere.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

# (first, last, script); checked in order, first hit wins.
_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0041, 0x024F, "Latin"),
    (0x1E00, 0x1EFF, "Latin"),  # Latin Extended Additional (Vietnamese tones)
    (0x0370, 0x03FF, "Greek"),
    (0x1F00, 0x1FFF, "Greek"),
    (0x0400, 0x052F, "Cyrillic"),
    (0x0530, 0x058F, "Armenian"),
    (0x0590, 0x05FF, "Hebrew"),
    (0x0600, 0x06FF, "Arabic"),
    (0x0750, 0x077F, "Arabic"),
    (0xFB50, 0xFDFF, "Arabic"),
    (0xFE70, 0xFEFF, "Arabic"),
    (0x0900, 0x097F, "Devanagari"),
    (0x0980, 0x09FF, "Bengali"),
    (0x0A00, 0x0A7F, "Gurmukhi"),
    (0x0A80, 0x0AFF, "Gujarati"),
    (0x0B80, 0x0BFF, "Tamil"),
    (0x0C00, 0x0C7F, "Telugu"),
    (0x0C80, 0x0CFF, "Kannada"),
    (0x0D00, 0x0D7F, "Malayalam"),
    (0x0D80, 0x0DFF, "Sinhala"),
    (0x0E00, 0x0E7F, "Thai"),
    (0x0E80, 0x0EFF, "Lao"),
    (0x0F00, 0x0FFF, "Tibetan"),
    (0x1000, 0x109F, "Myanmar"),
    (0x10A0, 0x10FF, "Georgian"),
    (0x1100, 0x11FF, "Hangul"),
    (0x1200, 0x139F, "Ethiopic"),
    (0x1780, 0x17FF, "Khmer"),
    (0x1800, 0x18AF, "Mongolian"),
    (0x3040, 0x309F, "Hiragana"),
    (0x30A0, 0x30FF, "Katakana"),
    (0x31F0, 0x31FF, "Katakana"),
    (0xFF66, 0xFF9F, "Katakana"),  # half-width
    (0x3130, 0x318F, "Hangul"),
    (0xAC00, 0xD7AF, "Hangul"),
    (0x3400, 0x4DBF, "Han"),
    (0x4E00, 0x9FFF, "Han"),
    (0xF900, 0xFAFF, "Han"),
    (0x20000, 0x2FA1F, "Han"),
)

# Characters whose simplified and traditional forms differ, written the way
# signs write them. A handful is enough to tell the two standards apart.
_SIMPLIFIED = set(
    "国东车门区广华马龙电铁会体说买卖长来时书为发么们这过还进运动关开间问"
    "阳阴页顺乐汉语学湾岛县乡镇陆桥厂场际务业医药银饭馆"
    "价厅园号线转欢临营点楼处总标"
)
_TRADITIONAL = set(
    "國東車門區廣華馬龍電鐵會體說買賣長來時書為發麼們這過還進運動關開間問"
    "陽陰頁順樂漢語學灣島縣鄉鎮陸橋廠場際務業醫藥銀飯館"
    "價廳園號線轉歡臨營點樓處總標臺"
)

# Country weights per script; they need not sum to one (the rest is "elsewhere").
SCRIPT_PRIORS: dict[str, dict[str, float]] = {
    "Hangul": {"KR": 0.9, "KP": 0.05},
    "Hiragana": {"JP": 0.95},
    "Katakana": {"JP": 0.9},
    "Thai": {"TH": 0.95},
    "Lao": {"LA": 0.95},
    "Khmer": {"KH": 0.95},
    "Myanmar": {"MM": 0.95},
    "Georgian": {"GE": 0.95},
    "Armenian": {"AM": 0.95},
    "Greek": {"GR": 0.85, "CY": 0.1},
    "Hebrew": {"IL": 0.95},
    "Sinhala": {"LK": 0.95},
    "Tibetan": {"CN": 0.6, "NP": 0.15, "BT": 0.15, "IN": 0.1},
    "Ethiopic": {"ET": 0.8, "ER": 0.15},
    "Mongolian": {"CN": 0.7, "MN": 0.3},
    "Devanagari": {"IN": 0.85, "NP": 0.15},
    "Bengali": {"BD": 0.6, "IN": 0.4},
    "Gurmukhi": {"IN": 0.9, "PK": 0.1},
    "Gujarati": {"IN": 0.95},
    "Tamil": {"IN": 0.75, "LK": 0.2, "SG": 0.05},
    "Telugu": {"IN": 0.95},
    "Kannada": {"IN": 0.95},
    "Malayalam": {"IN": 0.95},
    "Cyrillic": {
        "RU": 0.55,
        "UA": 0.15,
        "BY": 0.05,
        "KZ": 0.05,
        "BG": 0.05,
        "RS": 0.05,
        "MK": 0.03,
        "KG": 0.03,
        "MN": 0.03,
    },
    "Arabic": {
        "EG": 0.15,
        "SA": 0.15,
        "AE": 0.1,
        "MA": 0.08,
        "IR": 0.1,
        "IQ": 0.06,
        "PK": 0.08,
        "JO": 0.04,
        "DZ": 0.05,
        "TN": 0.04,
        "LB": 0.03,
    },
    "Han": {"CN": 0.55, "TW": 0.15, "HK": 0.1, "JP": 0.1, "SG": 0.05, "MO": 0.03},
}

# Han text refined by which standard it is written in, or by kana beside it.
_HAN_SIMPLIFIED = {"CN": 0.85, "SG": 0.08, "MY": 0.03}
_HAN_TRADITIONAL = {"TW": 0.5, "HK": 0.35, "MO": 0.1}

# Letters that few languages use, and where those languages are written.
LATIN_HINTS: tuple[tuple[str, str, dict[str, float]], ...] = (
    ("ãõ", "Portuguese", {"BR": 0.6, "PT": 0.4}),
    ("ñ", "Spanish", {"ES": 0.25, "MX": 0.25, "AR": 0.12, "CO": 0.12, "CL": 0.08, "PE": 0.08}),
    ("ß", "German", {"DE": 0.75, "AT": 0.2, "CH": 0.05}),
    ("őű", "Hungarian", {"HU": 0.95}),
    ("łśźżń", "Polish", {"PL": 0.95}),
    ("ğış", "Turkish", {"TR": 0.95}),
    ("ășțâ", "Romanian", {"RO": 0.85, "MD": 0.15}),
    ("ơưđ", "Vietnamese", {"VN": 0.95}),
    ("řůě", "Czech", {"CZ": 0.95}),
    ("åøæ", "Scandinavian", {"NO": 0.35, "DK": 0.35, "SE": 0.2}),
    ("ąęė", "Lithuanian/Polish", {"PL": 0.5, "LT": 0.45}),
    ("āēīūļņķģ", "Latvian", {"LV": 0.9}),
    ("čšž", "Slavic/Baltic", {"CZ": 0.2, "SK": 0.2, "SI": 0.15, "HR": 0.2, "LT": 0.1, "LV": 0.1}),
    ("ç", "French/Portuguese/Turkish", {"FR": 0.45, "PT": 0.15, "BR": 0.15, "TR": 0.1}),
    ("äöü", "German/Nordic", {"DE": 0.5, "AT": 0.12, "CH": 0.12, "FI": 0.1, "SE": 0.1}),
)


@dataclass(frozen=True)
class ScriptReport:
    """What the text is written in: letter counts per script and the hints
    that refine them (e.g. `"Han (simplified)"`, `"Latin: Spanish letters ñ"`)."""

    counts: dict[str, int]
    hints: tuple[str, ...]
    priors: dict[str, float]

    @property
    def dominant(self) -> str | None:
        return max(self.counts, key=lambda s: self.counts[s]) if self.counts else None


def detect_scripts(text: str, *, min_letters: int = 2) -> ScriptReport:
    """Count the letters of `text` per script and derive country priors from
    the scripts with at least `min_letters` letters (one stray glyph is more
    often OCR noise than writing)."""
    counts: Counter[str] = Counter()
    for ch in text:
        script = script_of(ch)
        if script:
            counts[script] += 1
    evident = Counter({s: n for s, n in counts.items() if n >= min_letters})
    hints, priors = _priors(text, evident)
    return ScriptReport(counts=dict(counts.most_common()), hints=tuple(hints), priors=priors)


# The gazetteer's names use about 5,000 distinct letters and ask millions of times;
# bounded, because battle questions (matched too) bring letters of their own choosing.
@lru_cache(maxsize=1 << 16)
def script_of(ch: str) -> str | None:
    """The script of one letter, or None for digits, punctuation and symbols."""
    if not ch.isalpha():
        return None
    code = ord(ch)
    for first, last, script in _RANGES:
        if first <= code <= last:
            return script
    return None


def script_priors(text: str) -> dict[str, float]:
    return detect_scripts(text).priors


# -- helpers ---------------------------------------------------------------------


def _priors(text: str, counts: Counter[str]) -> tuple[list[str], dict[str, float]]:
    """Mix the per-script priors by the share of letters in each script."""
    hints: list[str] = []
    per_script: dict[str, dict[str, float]] = {}
    for script in counts:
        if script == "Latin":
            latin = _latin_prior(text, hints)
            if latin:
                per_script[script] = latin
            continue
        if script == "Han":
            per_script[script] = _han_prior(text, counts, hints)
            continue
        if script in SCRIPT_PRIORS:
            per_script[script] = SCRIPT_PRIORS[script]
    if not per_script:
        return hints, {}
    # Plain Latin (no hint) adds no weight and so does not dilute the others.
    total = sum(counts[s] for s in per_script)
    mixed: dict[str, float] = {}
    for script, prior in per_script.items():
        share = counts[script] / total
        for country, weight in prior.items():
            mixed[country] = mixed.get(country, 0.0) + share * weight
    return hints, {c: round(w, 4) for c, w in sorted(mixed.items(), key=lambda kv: -kv[1])}


def _han_prior(text: str, counts: Counter[str], hints: list[str]) -> dict[str, float]:
    if counts.get("Hiragana") or counts.get("Katakana"):
        hints.append("Han with kana: Japanese")
        return {"JP": 0.95}
    simplified = sum(ch in _SIMPLIFIED for ch in text)
    traditional = sum(ch in _TRADITIONAL for ch in text)
    if simplified > traditional:
        hints.append(f"Han (simplified forms: {simplified})")
        return _HAN_SIMPLIFIED
    if traditional > simplified:
        hints.append(f"Han (traditional forms: {traditional})")
        return _HAN_TRADITIONAL
    hints.append("Han (no simplified/traditional tell-tale characters)")
    return SCRIPT_PRIORS["Han"]


def _latin_prior(text: str, hints: list[str]) -> dict[str, float]:
    lowered = unicodedata.normalize("NFC", text).lower()
    for letters, language, prior in LATIN_HINTS:
        found = sorted({ch for ch in lowered if ch in letters})
        if found:
            hints.append(f"Latin: {language} letters {' '.join(found)}")
            return prior
    return {}
