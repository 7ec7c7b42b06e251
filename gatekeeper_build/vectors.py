"""The encoder's pieces with their vectors (`data/pieces.npz`), and the sentencepiece model the
server cuts prompts with (`arena/gatekeeper/data/pieces.model`).

multilingual-e5-small tells a place question from a refusal in any of the
thirty languages, but far too slowly for a verdict. Each piece of its
vocabulary that the labelled prompts or the concept tables use is embedded
alone, once (`piece_table.py`, the way Model2Vec makes a static model of a
sentence encoder), and a prompt gains its mean piece vector as features
beside its n-grams. After the fit the vectors are folded into one number a
piece, so the server holds a tokeniser and a weight a piece, never a vector.

`pieces.npz` holds, for each piece kept: `text` and `offsets` (the pieces'
UTF-8, one after another), `scores` (each piece's unigram log-probability)
and `vectors` and `scale` (its embedding on the leading singular vectors of
all of them, in four bits a component, two to a byte, times a scale per
component).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from arena.gatekeeper.pieces import Tokeniser
from gatekeeper_build.corpus import DATA_DIR

VECTORS_PATH = DATA_DIR / "pieces.npz"
META = "\u2581"  # SentencePiece's mark of a word's start
# Smooth inverse frequency (Arora et al., 2017): a piece weighs a / (a + its share of all pieces),
# so "the" and "?" count for little in a prompt's mean and a rare, telling piece for much.
SIF = 1e-3
LEVELS = 7  # a stored vector component is -8..7 times its scale
UNKNOWN = "\u2047unknown\u2047"  # the unknown piece's name (in no vocabulary)


@dataclass(frozen=True)
class PieceVectors:
    """The pieces with their unigram scores and vectors: what fitting needs."""

    pieces: tuple[str, ...]
    scores: np.ndarray  # float32, the unigram log-probabilities
    vectors: np.ndarray  # float32, pieces x components

    @classmethod
    def read(cls, path: Path = VECTORS_PATH) -> PieceVectors:
        with np.load(path, allow_pickle=False) as npz:
            pieces = unpack(npz["text"], npz["offsets"])
            vectors = from_four_bits(npz["vectors"], npz["scale"])
            return cls(pieces, npz["scores"].astype(np.float32), vectors)

    def tokeniser(self, path: Path) -> Tokeniser:
        """The served tokeniser of these pieces, its model file written at `path`."""
        write_unigram_model(self.pieces, self.scores, path)
        return Tokeniser(path)

    def subset(self, keep: np.ndarray) -> PieceVectors:
        """Only the pieces where `keep` is true: what a model fitted without the others has."""
        return PieceVectors(
            tuple(p for p, k in zip(self.pieces, keep, strict=True) if k), self.scores[keep], self.vectors[keep]
        )

    def seen_in(self, texts: Iterable[str], scratch: Path) -> np.ndarray:
        """Which pieces cut any of `texts` (`scratch`: where the tokeniser's file may be written)."""
        tokeniser, seen = self.tokeniser(scratch), np.zeros(len(self.pieces), dtype=bool)
        for text in texts:
            seen[tokeniser.ids(text)] = True
        return seen


def write_unigram_model(pieces: Sequence[str], scores: np.ndarray, path: Path) -> Path:
    """A sentencepiece unigram model of `pieces`, written with sentencepiece's own protobuf
    classes: the unknown first, then the pieces in order (so sentencepiece's piece k is piece
    k - 1 here, as `Tokeniser.ids` reads it); a normaliser that leaves the text alone but for a
    word-start mark before each word (`Tokeniser.ids` has already normalised it)."""
    from sentencepiece import sentencepiece_model_pb2

    pb: Any = sentencepiece_model_pb2  # generated protobuf classes: no stubs
    model = pb.ModelProto()
    model.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    model.trainer_spec.unk_id, model.trainer_spec.bos_id, model.trainer_spec.eos_id = 0, -1, -1
    model.trainer_spec.pad_id = -1
    model.normalizer_spec.name = "identity"
    model.normalizer_spec.add_dummy_prefix = True
    model.normalizer_spec.escape_whitespaces = True
    model.normalizer_spec.remove_extra_whitespaces = False
    unknown = model.pieces.add()
    unknown.piece, unknown.score, unknown.type = UNKNOWN, 0.0, pb.ModelProto.SentencePiece.UNKNOWN
    for piece, score in zip(pieces, scores.tolist(), strict=True):
        entry = model.pieces.add()
        entry.piece, entry.score = piece, score
    path.write_bytes(model.SerializeToString())
    return path


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
    return tuple(blob[a:b].decode("utf-8") for a, b in pairwise(offsets.tolist()))
