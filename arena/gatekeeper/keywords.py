"""Cross-lingual concepts from Unicode CLDR's emoji annotations.

CLDR's translators give every emoji a few keywords in each language: 🌧 is
"mvua" in Swahili, "ฝน" in Thai and "rain" in English; 🏟 is "uwanja" and
"stadium"; 🐕 is "mbwa", "狗" and "dog". These are everyday words of the kinds
a photo question uses (weather, landscape, buildings, food, sport, animals,
objects), tied across all 30 languages by the emoji they name. A prompt's
word that is such a keyword carries the emoji as one more feature, so what
one language's prompts teach about rain or dogs reaches every other's.

The table is data, not a rule: the features' weights are learnt with the
n-grams', and no keyword decides a verdict alone (keyword stuffing is still
refused, tests/gatekeeper). `data/cldr-keywords.tsv` holds one
`lang <TAB> keyword <TAB> emoji...` a line (single-word keywords only, as
`features.words_of` sees them), made by
`python -m arena.gatekeeper.build keywords --cldr <git dir of unicode-org/cldr-json>`
(licence: `data/cldr-keywords.LICENSE`). `build fit` packs it into
`model.npz` as three arrays, which is what the server loads.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arena.gatekeeper.alignment import UNSPACED
from arena.gatekeeper.dataset import DATA_DIR

KEYWORDS_PATH = DATA_DIR / "cldr-keywords.tsv"
LONGEST_UNSPACED = 6  # characters: the longest Chinese, Japanese or Thai keyword looked for inside a run
SHORTEST_STEM = 4  # a word may lose up to three final letters ("snowing" finds "snow"), never below this
# Arabic and Hebrew write the article and some prepositions onto the word ("المطر", the rain).
_CLITICS = ("وال", "بال", "فال", "كال", "لل", "ال", "ו", "ה", "ב", "ל", "מ", "ש", "כ")
_CLITIC_STARTS = frozenset(c[0] for c in _CLITICS)


def concept_key(emoji: str) -> int:
    return zlib.crc32(b"e\x00" + emoji.encode("utf-8"))


@dataclass(frozen=True, eq=False)
class Keywords:
    """Keyword (in any language) -> the concept keys of the emoji it names, as CSR arrays:
    keyword `i` names `concepts[offsets[i]:offsets[i + 1]]`."""

    words: tuple[str, ...]
    offsets: np.ndarray  # int64, len(words) + 1
    concepts: np.ndarray  # uint32
    index: dict[str, int] = field(init=False, repr=False, compare=False)
    # the unspaced-script keywords by the hash `_substring_hashes` gives them: sorted, and their indices
    unspaced: tuple[np.ndarray, np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", dict(zip(self.words, range(len(self.words)), strict=True)))
        unspaced = [i for i, w in enumerate(self.words) if UNSPACED.match(w) and len(w) <= LONGEST_UNSPACED]
        hashes = _hashes([self.words[i] for i in unspaced])
        order = np.argsort(hashes)
        object.__setattr__(self, "unspaced", (hashes[order], np.array(unspaced, dtype=np.int64)[order]))

    @classmethod
    def read_tsv(cls, path: Path = KEYWORDS_PATH) -> Keywords:
        """The table as `build keywords` writes it (one language's keyword a line)."""
        named: dict[str, set[int]] = {}
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            try:
                _lang, keyword, emoji = line.split("\t")
            except ValueError:
                raise ValueError(f"{path.name}:{number}: not 'lang<TAB>keyword<TAB>emoji...'") from None
            named.setdefault(keyword, set()).update(concept_key(e) for e in emoji.split())
        words = tuple(sorted(named))
        sizes = np.array([len(named[w]) for w in words], dtype=np.int64)
        concepts = np.array([k for w in words for k in sorted(named[w])], dtype=np.uint32)
        return cls(words, np.concatenate([[0], np.cumsum(sizes)]), concepts)

    @classmethod
    def from_arrays(cls, text: np.ndarray, offsets: np.ndarray, concepts: np.ndarray) -> Keywords:
        """The table as `model.npz` stores it (`arrays()`)."""
        words = tuple(bytes(text).decode("utf-8").split("\n")) if len(text) else ()
        return cls(words, offsets.astype(np.int64), concepts.astype(np.uint32))

    def arrays(self) -> dict[str, np.ndarray]:
        text = np.frombuffer("\n".join(self.words).encode("utf-8"), dtype=np.uint8)
        return {"keyword_text": text, "keyword_offsets": self.offsets, "keyword_concepts": self.concepts}

    def lookup(self, words: list[str]) -> np.ndarray:
        """The concept keys the words name, each word matched whole, by its stem, or (in
        scripts written without spaces) as any substring of its run."""
        index = self.index
        hits: set[int] = set()
        runs = []
        for word in set(words):
            if UNSPACED.match(word):
                runs.append(word)
                continue
            i = index.get(word)
            if i is None:
                i = next((index[form] for form in _stems(word) if form in index), None)
            if i is not None:
                hits.add(i)
        hashes, ids = self.unspaced
        if runs and len(hashes):
            found = _substring_hashes(runs)
            at = np.minimum(np.searchsorted(hashes, found), len(hashes) - 1)
            hits.update(ids[at[hashes[at] == found]].tolist())
        if not hits:
            return np.zeros(0, np.uint32)
        return np.concatenate([self.concepts[self.offsets[i] : self.offsets[i + 1]] for i in hits])

    def __len__(self) -> int:
        return len(self.words)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Keywords):
            return NotImplemented
        return (
            self.words == other.words
            and np.array_equal(self.offsets, other.offsets)
            and np.array_equal(self.concepts, other.concepts)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside


_PRIME = np.uint64(0x100000001B3)


def _hashes(words: list[str]) -> np.ndarray:
    """Each word's hash, as `_substring_hashes` computes it: a polynomial over code points, mod 2**64."""
    codes = np.zeros((len(words), LONGEST_UNSPACED), dtype=np.uint64)
    for row, word in enumerate(words):
        codes[row, : len(word)] = np.frombuffer(word.encode("utf-32-le"), dtype=np.uint32)
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    h = np.zeros(len(words), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in range(LONGEST_UNSPACED):
            h = np.where(column < lengths, h * _PRIME + codes[:, column], h)
    return h


def _substring_hashes(runs: list[str]) -> np.ndarray:
    """The hash of every substring of 1 to LONGEST_UNSPACED characters inside each run: one
    pass of numpy over all runs (a Chinese prompt of 2,000 characters has some 12,000)."""
    codes = np.frombuffer(" ".join(runs).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    run = np.cumsum(codes == 32)  # a substring across the space between two runs is dropped
    h = np.zeros(len(codes), dtype=np.uint64)
    parts = []
    with np.errstate(over="ignore"):  # the hash wraps around 2**64 on purpose
        for n in range(1, min(LONGEST_UNSPACED, len(codes)) + 1):
            h = h[: len(codes) - n + 1] * _PRIME + codes[n - 1 :]
            start = codes[: len(codes) - n + 1] != 32
            parts.append(h[start & (run[n - 1 :] == run[: len(codes) - n + 1])])
    return np.concatenate(parts)


def _stems(word: str) -> Iterator[str]:
    for cut in (1, 2, 3):
        if len(word) - cut < SHORTEST_STEM:
            break
        yield word[:-cut]
    if word[0] in _CLITIC_STARTS:
        yield from (word[len(c) :] for c in _CLITICS if word.startswith(c) and len(word) - len(c) >= 2)
