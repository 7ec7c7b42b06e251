"""Cross-lingual concepts from two public tables: CLDR's emoji keywords and
Wiktionary's links to WordNet.

CLDR's translators give every emoji a few keywords in each language: 🌧 is
"mvua" in Swahili, "ฝน" in Thai and "rain" in English; 🏟 is "uwanja" and
"stadium"; 🐕 is "mbwa", "狗" and "dog". These are everyday words of the kinds
a photo question uses (weather, landscape, buildings, food, sport, animals,
objects), tied across all 30 languages by the emoji they name. The Open
Multilingual Wordnet's Wiktionary wordnets (Bond and Foster, 2013) tie
325,000 words and phrases of the 30 languages to the WordNet synsets they translate:
"build", "bauen" and "建てる"; "language", "lugha" and "ภาษา"; "freeze",
"gefrieren" and "замерзать". A prompt's word that is in either table carries
its concepts (emoji or synsets) as more features, so what one language's
prompts teach about rain, building or language reaches every other's.

The tables are data, not a rule: the features' weights are learnt with the
n-grams', and no word decides a verdict alone (keyword stuffing is still
refused, tests/gatekeeper). Both files hold one
`lang <TAB> word <TAB> concept...` a line in the build's `cldr-keywords.tsv`
(single words, as `features.words_of` sees them) and `omw-synsets.tsv` (one or
two words); `python -m gatekeeper_build fit` packs both, merged, into
`model.npz` as six arrays keyed by hash, which is what the server loads. A word is looked up in the
prompt's language only (`geo.language.guess_language`): the same letters
name different things in different languages (Swedish "and" is a duck).
Only CLDR's keywords are also found by a word's stem ("snowing" finds
"snow"): among Wiktionary's 325,000 words a stem too often names something
else ("cart" is three letters off "cartoon").
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from arena.gatekeeper.alignment import UNSPACED

LONGEST_UNSPACED = 6  # characters: the longest Chinese, Japanese or Thai word looked for inside a run
SHORTEST_STEM = 4  # a word may lose up to three final letters ("snowing" finds "snow"), never below this
# Arabic and Hebrew write the article and some prepositions onto the word ("المطر", the rain).
_CLITICS = ("وال", "بال", "فال", "كال", "لل", "ال", "ו", "ה", "ב", "ל", "מ", "ש", "כ")
_CLITIC_STARTS = frozenset(c[0] for c in _CLITICS)
# Korean writes its particles onto the noun ("위치를", the location as object; "사진에서", in the photo).
_PARTICLES = (  # longest first
    *("인가요", "이에요"),
    *("에서", "에게", "한테", "으로", "이랑", "하고", "까지", "부터", "보다", "처럼", "이나", "인가", "이야", "예요"),
    *("은", "는", "이", "가", "을", "를", "의", "에", "로", "와", "과", "도", "만", "랑", "나"),
)


def concept_key(concept: str) -> int:
    """An emoji's or a synset's key (the two never look alike: "🌧", "11501381-n")."""
    return zlib.crc32(b"e\x00" + concept.encode("utf-8"))


def word_keys(lang: str) -> Callable[[str], int]:
    """A word's or phrase's 64-bit key in language `lang`, `key_of(entry(word, lang))`: CRC-32 and
    Adler-32 side by side (two unrelated checksums; CRC-32 with another start value would only
    add the length). A word of a script written without spaces is keyed without its language.
    Both checksums continue from the language's prefix (zlib's start value) rather than
    checksumming a new string that begins with it: a third faster over a prompt's thousand
    words and phrases."""
    prefix = f"{lang}\x00".encode()
    crc_start, adler_start = zlib.crc32(prefix), zlib.adler32(prefix)
    crc, adler, unspaced = zlib.crc32, zlib.adler32, UNSPACED.match

    def key(word: str) -> int:
        if unspaced(word):
            return key_of(word)
        data = word.encode("utf-8")
        return (crc(data, crc_start) << 32) | adler(data, adler_start)

    return key


def entry(word: str, lang: str) -> str:
    """What a table row is keyed by: the word in its language, since the same letters name
    different things in different languages (Swedish "and" is a duck, Czech "to" is "it");
    Chinese and Japanese share their characters (and are told apart less surely), so the words
    of unspaced scripts are one entry whatever the language."""
    return word if UNSPACED.match(word) else f"{lang}\x00{word}"


@dataclass(frozen=True, eq=False)
class Keywords:
    """Word or two-word phrase in a language -> the concept keys it names, as arrays
    sorted by the word's key (`word_keys`): word `i` names `concepts[offsets[i]:offsets[i + 1]]`
    and may be found by a longer word's stem when `stems[i]`. Words of the scripts written
    without spaces are also found inside a run, by the substring hash in `unspaced`. Only
    keys are kept, no strings, so loading is reading arrays (339,000 words in about 0.2 s)."""

    keys: np.ndarray  # uint64, sorted, distinct
    offsets: np.ndarray  # int64, len(keys) + 1
    concepts: np.ndarray  # uint32
    stems: np.ndarray  # bool, len(keys)
    unspaced: np.ndarray  # uint64, sorted: the substring hash of each unspaced-script word
    unspaced_rows: np.ndarray  # int64: its row in `keys`
    # a bit per hash bucket that some unspaced word fills: most of a run's substrings stop here
    unspaced_filter: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "unspaced_filter", key_filter(self.unspaced))

    @classmethod
    def from_arrays(cls, **arrays: np.ndarray) -> Keywords:
        """The table as `model.npz` stores it (`arrays()`, without the `keyword_` prefix)."""
        return cls(
            arrays["keys"].astype(np.uint64),
            arrays["offsets"].astype(np.int64),
            arrays["concepts"].astype(np.uint32),
            arrays["stems"].astype(bool),
            arrays["unspaced"].astype(np.uint64),
            arrays["unspaced_rows"].astype(np.int64),
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "keyword_keys": self.keys,
            "keyword_offsets": self.offsets.astype(np.uint32),
            "keyword_concepts": self.concepts,
            "keyword_stems": self.stems.astype(np.uint8),
            "keyword_unspaced": self.unspaced,
            "keyword_unspaced_rows": self.unspaced_rows.astype(np.uint32),
        }

    def lookup(self, words: list[str], lang: str) -> np.ndarray:
        """The concept keys the words name in language `lang`: each word matched whole, each
        two neighbours as a phrase ("thời tiết", "train station"); a word not found whole by its
        longest stem that is a keyword, or without the article written onto it; and (in scripts
        written without spaces, whatever `lang`) any substring of a run."""
        spaced: list[str] = []
        runs: list[str] = []
        for word in dict.fromkeys(words):
            (runs if UNSPACED.match(word) else spaced).append(word)
        pairs = list({f"{a} {b}" for a, b in pairwise(words)})
        found = self._rows(spaced + pairs, lang)
        hits = set(found[found >= 0].tolist())
        missing = [w for w, row in zip(spaced, found[: len(spaced)].tolist(), strict=True) if row < 0]
        forms = [(n, form, stem) for n, w in enumerate(missing) for form, stem in _forms(w)]
        if forms:
            rows = self._rows([form for _, form, _ in forms], lang).tolist()
            taken: set[int] = set()
            for (n, _, stem), row in zip(forms, rows, strict=True):
                if row >= 0 and n not in taken and (self.stems[row] or not stem):
                    taken.add(n)
                    hits.add(row)
        if runs and len(self.unspaced):
            sub = substrings(runs, LONGEST_UNSPACED)[0]
            sub = sub[maybe_in(self.unspaced_filter, sub)]
            at = np.minimum(np.searchsorted(self.unspaced, sub), len(self.unspaced) - 1)
            hits.update(self.unspaced_rows[at[self.unspaced[at] == sub]].tolist())
        if not hits:
            return np.zeros(0, np.uint32)
        return np.concatenate([self.concepts[self.offsets[i] : self.offsets[i + 1]] for i in hits])

    def _rows(self, words: list[str], lang: str) -> np.ndarray:
        """Each word's row in language `lang`, or -1."""
        if not words or not len(self.keys):
            return np.full(len(words), -1, dtype=np.int64)
        keys = np.fromiter(map(word_keys(lang), words), dtype=np.uint64, count=len(words))
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[at] == keys, at, -1)

    def __len__(self) -> int:
        return len(self.keys)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Keywords):
            return NotImplemented
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside


def key_of(text: str) -> int:
    data = text.encode("utf-8")
    return (zlib.crc32(data) << 32) | zlib.adler32(data)


_FILTER_BUCKETS = 1 << 20
_FIELDS = ("keys", "offsets", "concepts", "stems", "unspaced", "unspaced_rows")


# the polynomial hash's multiplier, shared with features.py's character n-grams
POLY_PRIME = np.uint64(0x100000001B3)


def key_filter(keys: np.ndarray) -> np.ndarray:
    """A bit per hash bucket that one of `keys` fills: most keys looked for stop here."""
    buckets = np.zeros(_FILTER_BUCKETS, dtype=bool)
    buckets[(keys & np.uint64(_FILTER_BUCKETS - 1)).astype(np.intp)] = True
    return buckets


def maybe_in(bits: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of `keys` may be among those `bits` (a `key_filter`) was made of; the others are not."""
    return np.asarray(bits[(keys & np.uint64(_FILTER_BUCKETS - 1)).astype(np.intp)])


def whole_hashes(words: list[str]) -> np.ndarray:
    """Each word's hash, as `substrings` computes it: a polynomial over code points, mod 2**64."""
    width = max((len(w) for w in words), default=0)
    codes = np.zeros((len(words), width), dtype=np.uint64)
    for row, word in enumerate(words):
        codes[row, : len(word)] = np.frombuffer(word.encode("utf-32-le"), dtype=np.uint32)
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    h = np.zeros(len(words), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in range(width):
            h = np.where(column < lengths, h * POLY_PRIME + codes[:, column], h)
    return h


def substrings(runs: list[str], longest: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The hash of every substring of 1 to `longest` characters inside each run, with the run it
    is in, where in the run it starts and its length: one pass of numpy over all runs (a Chinese
    prompt of 2,000 characters has some 12,000 substrings of up to six characters)."""
    codes = np.frombuffer(" ".join(runs).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    run = np.cumsum(codes == 32)  # which run a character is in (a space counts with the next)
    begins = np.concatenate([[0], np.flatnonzero(codes == 32) + 1])
    h = np.zeros(len(codes), dtype=np.uint64)
    parts = [(np.zeros(0, np.uint64), *(np.zeros(0, np.int64),) * 3)]
    with np.errstate(over="ignore"):  # the hash wraps around 2**64 on purpose
        for n in range(1, min(longest, len(codes)) + 1):
            h = h[: len(codes) - n + 1] * POLY_PRIME + codes[n - 1 :]
            # a substring across the space between two runs is dropped
            at = np.flatnonzero((codes[: len(h)] != 32) & (run[n - 1 :] == run[: len(h)]))
            parts.append((h[at], run[at], at - begins[run[at]], np.full(len(at), n, dtype=np.int64)))
    hashes, in_run, offsets, lengths = (np.concatenate(column) for column in zip(*parts, strict=True))
    return hashes, in_run, offsets, lengths


def clitic_free(word: str) -> list[str]:
    """The word without an article or preposition written onto it (Arabic, Hebrew), the
    longest one first; none when it starts with no such letter."""
    if word[:1] not in _CLITIC_STARTS:
        return []
    return [word[len(c) :] for c in _CLITICS if word.startswith(c) and len(word) - len(c) >= 2]


def _forms(word: str) -> Iterator[tuple[str, bool]]:
    """Shorter forms of a word, longest first, each with whether it is a stem (found only
    among stemmable keywords): up to three final letters off, then an article or
    preposition written onto an Arabic or Hebrew word, or a particle onto a Korean one
    (found in every table)."""
    for cut in (1, 2, 3):
        if len(word) - cut < SHORTEST_STEM:
            break
        yield word[:-cut], True
    yield from ((form, False) for form in clitic_free(word))
    if "\uac00" <= word[-1] <= "\ud7a3":  # a Hangul syllable
        yield from ((word[: -len(p)], False) for p in _PARTICLES if word.endswith(p) and len(word) > len(p))
