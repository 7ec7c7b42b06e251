"""A light guess of a prompt's language (ISO 639-1), for per-language
leaderboards and for wording the gatekeeper's refusal.

Thirty languages: a script settles Japanese (kana), Korean, Chinese, Thai,
Hebrew, Greek, Hindi and Bengali; letters only one language of a script uses
split Russian from Ukrainian and Arabic from Persian; among the eighteen
Latin-script languages, character n-gram profiles (`language_profiles.json`,
made from the gatekeeper's labelled prompts) decide, with letters peculiar
to a language and frequent function words as a nudge. "und" (undetermined) when nothing does. Measured on the
gatekeeper's labelled prompts by `benchmarks/gatekeeper.py`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from arena.geo.scripts import script_of

# A script that settles the language, checked in this order: kana settles
# Japanese even among kanji; Bengali before Hindi, since Bengali writes the
# Devanagari danda too. Scripts come from the one table, `geo.scripts`.
_SCRIPT_LANGUAGES = (
    ("Hiragana", "ja"),
    ("Katakana", "ja"),
    ("Hangul", "ko"),
    ("Han", "zh"),
    ("Thai", "th"),
    ("Hebrew", "he"),
    ("Bengali", "bn"),
    ("Devanagari", "hi"),
    ("Greek", "el"),
)
# Letters that tell languages of one script apart
_UKRAINIAN = re.compile(r"[іїєґ]", re.IGNORECASE)
_RUSSIAN = re.compile(r"[ыэъё]", re.IGNORECASE)
_PERSIAN = re.compile(r"[پچژگکی۰-۹]")  # letters and digits Arabic does not use

# Letters that mark one Latin-script language (or nearly), each hit counts twice.
_LETTERS = {
    "vi": "ạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹđơư",
    "ro": "ășțşţ",
    "pl": "ąęłńśźż",
    "cs": "ěščřžůťďň",
    "hu": "őű",
    "tr": "ğış",
    "de": "ß",
    "sv": "å",
    "es": "ñ¿¡",
    "pt": "ãõ",
    "fr": "œëïûù",
}
_FUNCTION_WORDS = {
    "en": "the is are was this what where which how do you i it of to and in my me can with that there for be have your on",
    "de": "der die das ist und nicht wo wurde dieses diese ich du ein eine wie was welche welcher mit auf hier bitte den dem sie es zu von im zurück gibt liste zahl zahlen eines einer",
    "es": "el la los las es de que en qué dónde cómo esta este una un por para con se muy del y lista devuelve números cadena puedes tu eres",
    "fr": "le la les est de que où dans cette ce une un qui quel quelle pour avec sur je tu pas des du au vous liste renvoie nombre chaîne est-ce",
    "it": "il la è di che dove in questa questo una un per con sono come chi non quale gli mi ti del della sei hai ho cosa perché anche ma lista numeri restituisce stringa",
    "pt": "o a os é de que onde em esta este uma um foi com para não você qual como do da você são lista retorna números cadeia",
    "nl": "de het is een van en waar dit deze wat welke hoe ik je niet op met er zijn je wordt lijst getal geef terug als ben heb",
    "sv": "det är en ett och var den här vad vilken hur jag du inte på med som av",
    "pl": "jest w na i to co gdzie jak czy ten ta nie się z do jaki jaka",
    "cs": "je v na a to co kde jak jaký jaká se z do ten tato není",
    "hu": "a az és egy hol mi ez ezt van nem hogy melyik milyen hogyan kép",
    "ro": "este în și de ce unde cum această acest un o nu la cu care",
    "tr": "bu ne nerede ve bir mi mı için hangi nasıl değil ile da de olan listesi sayı döndür verilen sen ben",
    "id": "ini itu di yang dan apa mana apakah tidak dengan untuk saya anda bisa sini adalah kapan kamu aja nggak daftar nomor bagaimana mengapa sudah",
    "ms": "ini itu di yang dan apa manakah apakah tidak dengan untuk saya anda boleh sini ialah adakah bandar senarai nombor rentetan kereta sahaja awak hendak bagaimanakah berapakah siapakah mengapakah",
    "sw": "hii ni na wa ya kwa gani wapi nini je hapa hiki huu katika picha",
    "tl": "ang ng mga sa ito saan ano na ba ko mo ay para kung",
    "vi": "là của và có này ở đâu gì không những một được cho người",
}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_VOCAB = {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}


GUESS_CHARS = 300  # the start of a prompt says its language; reading all 2,000 characters costs time


def guess_language(text: str) -> str:
    """The prompt's language as an ISO 639-1 code, or "und"."""
    text = text[:GUESS_CHARS]
    scripts = {script_of(ch) for ch in text if not ch.isascii()}
    for script, language in _SCRIPT_LANGUAGES:
        if script in scripts:
            return language
    if "Cyrillic" in scripts:
        ukrainian = len(_UKRAINIAN.findall(text))
        return "uk" if ukrainian and ukrainian >= len(_RUSSIAN.findall(text)) else "ru"
    if "Arabic" in scripts:
        return "fa" if _PERSIAN.search(text) else "ar"
    lowered = unicodedata.normalize("NFKC", text).lower()
    words = _WORD.findall(lowered)
    if not words:
        return "und"
    votes = {lang: float(sum(w in vocab for w in words)) for lang, vocab in _VOCAB.items()}
    for lang, letters in _LETTERS.items():
        votes[lang] += 2 * min(3, sum(lowered.count(ch) for ch in letters))
    # Character n-gram profiles (naive Bayes) decide; the votes above add a nudge in nats.
    table = _profile_table()
    counts = Counter(g for w in words for g in _grams(w))
    rows = np.array([table.rows.get(g, -1) for g in counts], dtype=np.intp)
    n = np.array(list(counts.values()), dtype=np.float64)
    known = rows >= 0
    logs = n[known] @ table.logs[rows[known]] + n[~known].sum() * table.floors
    scores = logs / max(n.sum(), 1.0) + 0.3 * np.array([votes[lang] for lang in table.languages])
    return table.languages[int(np.argmax(scores))]


@dataclass(frozen=True)
class _ProfileTable:
    """The profiles as one matrix: a row per n-gram any profile knows, a column per language
    (its floor where it does not know the n-gram), so a prompt is scored in one product."""

    languages: tuple[str, ...]
    rows: dict[str, int]
    logs: np.ndarray  # (n-grams, languages)
    floors: np.ndarray  # (languages,)


@cache
def _profile_table() -> _ProfileTable:
    profiles = _profiles()
    languages = tuple(profiles)
    grams = sorted({g for p in profiles.values() for g in p["grams"]})
    floors = np.array([profiles[lang]["floor"] for lang in languages], dtype=np.float64)
    logs = np.tile(floors, (len(grams), 1))
    rows = {g: i for i, g in enumerate(grams)}
    for column, lang in enumerate(languages):
        for g, value in profiles[lang]["grams"].items():
            logs[rows[g], column] = value
    return _ProfileTable(languages, rows, logs, floors)


def _grams(word: str) -> list[str]:
    padded = f" {word} "
    return [padded[i : i + n] for n in (1, 2, 3) for i in range(len(padded) - n + 1) if padded[i : i + n] != " "]


@cache
def _profiles() -> dict[str, dict[str, Any]]:
    """Per Latin-script language, the log-frequency of its 700 commonest character 1-3-grams in the
    gatekeeper's labelled prompts (and a floor for the rest); made by `arena.gatekeeper.build languages`."""
    profiles: dict[str, dict[str, Any]] = json.loads(
        Path(__file__).with_name("language_profiles.json").read_text("utf-8")
    )
    return profiles
