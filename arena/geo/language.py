"""A light guess of a prompt's language (ISO 639-1), for per-language
leaderboards and for wording the gatekeeper's refusal.

Thirty languages: a script settles Japanese (kana), Korean, Chinese, Thai,
Hebrew, Greek, Hindi and Bengali; letters only one language of a script uses
split Arabic from Persian, and Russian from Ukrainian when there are any;
otherwise character n-gram profiles (`language_profiles.json`, made from
the gatekeeper's labelled prompts) decide between Russian and Ukrainian, and
among the eighteen Latin-script languages, where letters peculiar to a
language and frequent function words add a nudge. "und" (undetermined) when
nothing does. Measured on the gatekeeper's labelled prompts, with profiles
made without the prompts scored, by `benchmarks/gatekeeper.py`.
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


# The languages that profiles tell apart: those of the Latin script, and Russian from Ukrainian.
LATIN = ("cs", "de", "en", "es", "fr", "hu", "id", "it", "ms", "nl", "pl", "pt", "ro", "sv", "sw", "tl", "tr", "vi")
CYRILLIC = ("ru", "uk")
PROFILED = LATIN + CYRILLIC

GUESS_CHARS = 300  # the start of a prompt says its language; reading all 2,000 characters costs time


def guess_language(text: str, profiles: Profiles | None = None) -> str:
    """The prompt's language as an ISO 639-1 code, or "und". `profiles`: other than the
    shipped ones (the benchmark's, made without the prompts it scores)."""
    text = text[:GUESS_CHARS]
    scripts = {script_of(ch) for ch in text if not ch.isascii()}
    for script, language in _SCRIPT_LANGUAGES:
        if script in scripts:
            return language
    if "Arabic" in scripts:
        return "fa" if _PERSIAN.search(text) else "ar"
    profiles = profiles or shipped_profiles()
    lowered = unicodedata.normalize("NFKC", text).lower()
    words = _WORD.findall(lowered)
    if "Cyrillic" in scripts:
        ukrainian, russian = len(_UKRAINIAN.findall(text)), len(_RUSSIAN.findall(text))
        if ukrainian or russian:
            return "uk" if ukrainian >= russian else "ru"
        # neither's own letters ("Ти можеш ходити?"): their profiles decide
        return profiles.likeliest(words, CYRILLIC, np.zeros(len(CYRILLIC)))
    if not words:
        return "und"
    votes = {lang: float(sum(w in vocab for w in words)) for lang, vocab in _VOCAB.items()}
    for lang, letters in _LETTERS.items():
        votes[lang] += 2 * min(3, sum(lowered.count(ch) for ch in letters))
    return profiles.likeliest(words, LATIN, 0.3 * np.array([votes[lang] for lang in LATIN]))


@dataclass(frozen=True)
class Profiles:
    """Per language of PROFILED, the log-frequency of its commonest character 1-3-grams
    (`arena.gatekeeper.fitting.language_profiles`), as one matrix: a row per n-gram any
    profile knows, a column per language (its floor where it does not know the n-gram),
    so a prompt is scored in one product."""

    languages: tuple[str, ...]
    rows: dict[str, int]
    logs: np.ndarray  # (n-grams, languages)
    floors: np.ndarray  # (languages,)

    @classmethod
    def of(cls, profiles: dict[str, dict[str, Any]]) -> Profiles:
        """From `{lang: {"floor": float, "grams": {gram: log-frequency}}}`, as the JSON file holds them."""
        languages = tuple(profiles)
        grams = sorted({g for p in profiles.values() for g in p["grams"]})
        floors = np.array([profiles[lang]["floor"] for lang in languages], dtype=np.float64)
        logs = np.tile(floors, (len(grams), 1))
        rows = {g: i for i, g in enumerate(grams)}
        for column, lang in enumerate(languages):
            for g, value in profiles[lang]["grams"].items():
                logs[rows[g], column] = value
        return cls(languages, rows, logs, floors)

    def likeliest(self, words: list[str], candidates: tuple[str, ...], nudge: np.ndarray) -> str:
        """Of `candidates`, the language whose profile (naive Bayes) likes `words` best,
        plus a `nudge` in nats per candidate."""
        columns = np.array([self.languages.index(lang) for lang in candidates], dtype=np.intp)
        counts = Counter(g for w in words for g in grams(w))
        rows = np.array([self.rows.get(g, -1) for g in counts], dtype=np.intp)
        n = np.array(list(counts.values()), dtype=np.float64)
        known = rows >= 0
        logs = n[known] @ self.logs[np.ix_(rows[known], columns)] + n[~known].sum() * self.floors[columns]
        return candidates[int(np.argmax(logs / max(n.sum(), 1.0) + nudge))]


def grams(word: str) -> list[str]:
    """A word's character 1-3-grams, padded with a space each side (the profiles' units)."""
    padded = f" {word} "
    return [padded[i : i + n] for n in (1, 2, 3) for i in range(len(padded) - n + 1) if padded[i : i + n] != " "]


@cache
def shipped_profiles() -> Profiles:
    """The profiles of `language_profiles.json` (`python -m gatekeeper_build languages`),
    made from the gatekeeper's labelled prompts."""
    return Profiles.of(json.loads(Path(__file__).with_name("language_profiles.json").read_text("utf-8")))
