"""Cross-lingual concepts for the offline gatekeeper, learnt from parallel prompts.

Character and word n-grams are language-bound: "picha" (Swahili) teaches
nothing about "Foto", so a language with a few dozen geographic prompts
learns only the topics it was shown. Many training prompts are translations
of one another, though: XQuAD's, mHumanEval's and xGQA's rows share an id
across languages, and our own prompts are written line for line in each
language (the build's `data/authored/`, same section, same line). Each such set is a
*group*. A token of one language whose groups match a pivot-language token's
groups (Dice coefficient over the groups both languages have) is taken for
its translation, and a prompt gets one more feature per translated token:
the pivot token, shared by every language. "Does it snow here?" in Swahili
then carries the German "schneit" and "hier", whose weights the other
twenty-nine languages taught.

Nothing here is written by hand: the build induces the table from the
training rows of each fit (`gatekeeper_build/fitting.py`; a held-out
evaluation induces it without the held-out rows), and it is shipped with the
weights as two arrays.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# Scripts written without spaces between words: their tokens are character bigrams, or trigrams
# in Thai, whose vowel signs and tone marks are characters of their own (held out, Thai's
# prompts: 0.949 with bigrams, 0.955 with trigrams).
UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
THAI = re.compile(r"[\u0e00-\u0e7f]")


def tokens(words: Iterable[str]) -> list[str]:
    """The units aligned across languages: words, or character n-grams of unspaced scripts."""
    out: list[str] = []
    for word in words:
        n = _cut(word)
        out += [word[i : i + n] for i in range(len(word) - n + 1)] if n else [word]
    return out


def token_starts(words: Sequence[str]) -> np.ndarray:
    """Where each word's first token is in `tokens(words)`, and their number at the end."""
    counts = [len(word) - n + 1 if (n := _cut(word)) else 1 for word in words]
    return np.concatenate([[0], np.cumsum(counts, dtype=np.intp)]).astype(np.intp)


def _cut(word: str) -> int:
    """The length of a word's character n-grams, or 0 when the word is one token."""
    if word[0] < "\u0e00":  # before Thai, the first of the unspaced scripts: most words, at once
        return 0
    n = 3 if THAI.match(word) else 2
    return n if len(word) >= n and UNSPACED.match(word) else 0


def token_key(token: str) -> int:
    return zlib.crc32(b"t\x00" + token.encode("utf-8"))


def concept_key(pivot_token: str) -> int:
    return zlib.crc32(b"c\x00" + pivot_token.encode("utf-8"))


@dataclass(frozen=True)
class Alignment:
    """Sorted token keys and the concept key each one carries."""

    keys: np.ndarray  # uint32, sorted
    concepts: np.ndarray  # uint32, same length

    def found(self, token_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positions of the tokens that have a concept, and their concept keys."""
        if not len(self.keys) or not len(token_keys):
            return np.zeros(0, np.intp), np.zeros(0, np.uint32)
        at = np.minimum(np.searchsorted(self.keys, token_keys), len(self.keys) - 1)
        hit = self.keys[at] == token_keys
        return np.flatnonzero(hit), np.asarray(self.concepts[at[hit]])

    def __len__(self) -> int:
        return len(self.keys)
