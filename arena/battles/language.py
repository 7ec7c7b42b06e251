"""A light guess of a prompt's language, for per-language leaderboards.

Scripts settle most languages; among Latin-script languages a handful of
frequent function words decide. "und" (undetermined) when nothing does.
"""

from __future__ import annotations

import re

_SCRIPTS = [  # (language, regex of its characteristic script), most specific first
    ("ja", re.compile(r"[\u3040-\u30ff]")),  # kana settles Japanese even among kanji
    ("ko", re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")),
    ("zh", re.compile(r"[\u4e00-\u9fff]")),
    ("ru", re.compile(r"[\u0400-\u04ff]")),
    ("ar", re.compile(r"[\u0600-\u06ff]")),
    ("th", re.compile(r"[\u0e00-\u0e7f]")),
    ("he", re.compile(r"[\u0590-\u05ff]")),
    ("hi", re.compile(r"[\u0900-\u097f]")),
    ("el", re.compile(r"[\u0370-\u03ff]")),
]

_FUNCTION_WORDS = {
    "en": {"the", "where", "was", "this", "is", "which", "what", "taken", "in", "of", "and", "photo"},
    "es": {"el", "la", "dónde", "donde", "esta", "foto", "qué", "que", "en", "de", "fue", "tomada", "país"},
    "fr": {"le", "la", "où", "cette", "photo", "est", "quel", "quelle", "dans", "de", "été", "prise", "pays"},
    "de": {"wo", "wurde", "dieses", "foto", "ist", "der", "die", "das", "in", "welchem", "aufgenommen", "land"},
    "pt": {"onde", "esta", "foto", "foi", "tirada", "qual", "em", "de", "país", "cidade", "é", "do", "da"},
    "it": {"dove", "questa", "foto", "è", "stata", "scattata", "quale", "in", "di", "paese", "il"},
}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def guess_language(text: str) -> str:
    for language, script in _SCRIPTS:
        if script.search(text):
            return language
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return "und"
    scores = {lang: sum(w in vocab for w in words) for lang, vocab in _FUNCTION_WORDS.items()}
    best = max(scores, key=lambda lang: scores[lang])
    return best if scores[best] > 0 else "und"
