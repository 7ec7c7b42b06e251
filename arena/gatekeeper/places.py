"""Place names as one more cross-lingual concept of the offline gatekeeper.

"Ist das Lübeck oder Stralsund?", "هل هذه طنجة أم تطوان؟" and "Esta praia é em
Cabo Verde?" ask about the photo by naming the places it might show; a quiz
names a place too ("What is the capital of France?"). Which place matters less
than that a place is named, and next to what: "this", "or", "in". The
gazetteer (arena.geo) knows some 270,000 names of countries, first-level
regions and cities, in the scripts of the thirty languages (227,000 of them
are kept, MIN_QUALITY). It has no lakes, seas, rivers, mountains or famous
buildings ("Ist das der Bodensee?", "Liegt das am Mittelmeer?"): those come
from Princeton WordNet's named places, found in the thirty languages through
the Wiktionary synsets (the build's `wordnet-places.tsv` and `omw-synsets.tsv`). A name in a prompt carries
the concept *a place*, and *a country* (region, city, natural feature,
landmark), whatever its language, and it pairs with the concepts near it
(features.concept_pairs) as an aligned token does.

Only keys are kept, in `model.npz`: the gazetteer takes seconds to build, far
over the half second the model may take to load. Names are found the
gazetteer's way: folded (no case, no accents), the longest first, whole words
in scripts written with spaces and anywhere in a run of those without; an
Arabic or Hebrew name is also found under an article or preposition written
onto it ("באוסטרליה", in Australia).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from arena.gatekeeper.alignment import token_starts
from arena.gatekeeper.keywords import POLY_PRIME, clitic_free, key_filter, maybe_in, substrings
from arena.geo.gazetteer import fold

KINDS = ("country", "region", "city", "nature", "landmark")
MAX_WORDS = 4  # as the gazetteer: "Santiago de Compostela", "Bosnia and Herzegovina"
LONGEST_UNSPACED = 8  # characters: a longer name in a script without spaces is not looked for
# The scripts the gazetteer searches as runs of characters (Han, kana, Hangul, Thai, Lao, Myanmar, Khmer).
UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3\uf900-\ufaff]")


@dataclass(frozen=True)
class PlaceNames:
    """The 64-bit keys of the place names, sorted, each with the index of its kind in KINDS."""

    spaced: np.ndarray  # uint64: a name of 1 to MAX_WORDS words, by `phrase_keys`
    spaced_kinds: np.ndarray  # uint8
    unspaced: np.ndarray  # uint64: a name in an unspaced script, by `keywords.whole_hashes`
    unspaced_kinds: np.ndarray  # uint8
    # a bit per hash bucket that some name fills: most of a prompt's words and runs stop here
    spaced_filter: np.ndarray = field(init=False, repr=False, compare=False)
    unspaced_filter: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spaced_filter", key_filter(self.spaced))
        object.__setattr__(self, "unspaced_filter", key_filter(self.unspaced))

    @classmethod
    def from_arrays(cls, **arrays: np.ndarray) -> PlaceNames:
        """The table as `model.npz` stores it (`arrays()`, without the `place_` prefix)."""
        return cls(
            arrays["spaced"].astype(np.uint64),
            arrays["spaced_kinds"].astype(np.uint8),
            arrays["unspaced"].astype(np.uint64),
            arrays["unspaced_kinds"].astype(np.uint8),
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "place_spaced": self.spaced,
            "place_spaced_kinds": self.spaced_kinds,
            "place_unspaced": self.unspaced,
            "place_unspaced_kinds": self.unspaced_kinds,
        }

    def find(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The names among `words` (features.words_of), longest first and not overlapping: where
        each starts in `alignment.tokens(words)`, and its kind."""
        folded = fold(" ".join(words)).split(" ")  # folding is letter by letter: one call for all
        if len(folded) != len(words):  # a letter folded to a space (none is known): word by word
            folded = [fold(w) for w in words]
        found = sorted(self._in_words(folded) + self._in_runs(folded))
        if not found:  # most prompts: no need to place anything among the tokens
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.uint8)
        starts = token_starts(words)
        # a name inside a run starts one of its character n-grams (a Korean word is one token)
        at = [starts[i] + min(c, starts[i + 1] - starts[i] - 1) for i, c, _ in found]
        return np.array(at, dtype=np.intp), np.array([kind for _, _, kind in found], dtype=np.uint8)

    def _in_words(self, folded: list[str]) -> list[tuple[int, int, int]]:
        """(word, 0, kind) of each name of one to MAX_WORDS whole words, the longest first at each
        word; then of each word that is a name under an Arabic or Hebrew clitic ("באוסטרליה")."""
        keys = name_keys(folded)
        hits = sorted(
            (i, -n, kind)
            for n in range(1, min(MAX_WORDS, len(keys)) + 1)
            for i, kind in self._found_spaced(phrase_keys(keys, n))
        )
        found, covered = [], -1
        for i, minus_n, kind in hits:
            if i > covered:
                found.append((i, 0, kind))
                covered = i - minus_n - 1
        named = {i for i, minus_n, _ in hits for i in range(i, i - minus_n)}
        forms = [(i, form) for i, word in enumerate(folded) if i not in named for form in clitic_free(word)]
        for k, kind in self._found_spaced(phrase_keys(name_keys([form for _, form in forms]), 1)):
            if (i := forms[k][0]) not in named:
                named.add(i)
                found.append((i, 0, kind))
        return found

    def _in_runs(self, folded: list[str]) -> list[tuple[int, int, int]]:
        """(word, first character, kind) of each name inside a word of a script without spaces,
        the longest first at each character, among all such words' substrings at once (a Chinese
        prompt of 2,000 characters has some 14,000 to look up)."""
        runs = [i for i, word in enumerate(folded) if word >= "\u0e00" and UNSPACED.match(word)]
        if not runs or not len(self.unspaced):
            return []
        hashes, in_run, offsets, lengths = substrings([folded[i] for i in runs], LONGEST_UNSPACED)
        hits = [
            (int(in_run[k]), int(offsets[k]), -int(lengths[k]), kind)
            for k, kind in self._found_unspaced(hashes)
            if lengths[k] > 1  # the gazetteer's names have two characters or more
        ]
        found, last, covered = [], -1, -1
        for r, at, minus_n, kind in sorted(hits):
            if r != last:
                last, covered = r, -1
            if at > covered:
                found.append((runs[r], at, kind))
                covered = at - minus_n - 1
        return found

    def _found_spaced(self, wanted: np.ndarray) -> list[tuple[int, int]]:
        return _found(self.spaced, self.spaced_kinds, self.spaced_filter, wanted)

    def _found_unspaced(self, wanted: np.ndarray) -> list[tuple[int, int]]:
        return _found(self.unspaced, self.unspaced_kinds, self.unspaced_filter, wanted)

    def __len__(self) -> int:
        return len(self.spaced) + len(self.unspaced)


def name_keys(words: Sequence[str]) -> np.ndarray:
    crc = zlib.crc32
    return np.fromiter((crc(w.encode("utf-8")) for w in words), dtype=np.uint64, count=len(words))


def phrase_keys(word_keys: np.ndarray, n: int) -> np.ndarray:
    """The key of every run of n words: a polynomial over their CRC-32s, mod 2**64."""
    h = np.zeros(max(len(word_keys) - n + 1, 0), dtype=np.uint64)
    with np.errstate(over="ignore"):  # the hash wraps around 2**64 on purpose
        for k in range(n):
            h = h * POLY_PRIME + word_keys[k : len(word_keys) - n + 1 + k] + np.uint64(1)
    return h


def _found(keys: np.ndarray, kinds: np.ndarray, bits: np.ndarray, wanted: np.ndarray) -> list[tuple[int, int]]:
    """(index in `wanted`, kind) of each wanted key that is in `keys` (`bits`: their filter)."""
    if not len(keys) or not len(wanted):
        return []
    maybe = np.flatnonzero(maybe_in(bits, wanted))
    at = np.minimum(np.searchsorted(keys, wanted[maybe]), len(keys) - 1)
    hit = keys[at] == wanted[maybe]
    return list(zip(maybe[hit].tolist(), kinds[at[hit]].tolist(), strict=True))
