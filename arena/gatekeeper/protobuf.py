"""Protobuf's wire format, enough to write the two models the gatekeeper hands to C++ libraries:
sentencepiece's ModelProto (pieces.py) and ONNX's (student_graph.py).

Written here in a few milliseconds; importing the `onnx` package to write the second took 0.6 s,
half of the encoder's start-up, for a graph of fifty operators.
"""

from __future__ import annotations

import struct

_ONE_BYTE = [bytes((n,)) for n in range(0x80)]
LENGTH_DELIMITED, FIXED32 = 2, 5  # wire types (a varint's is 0)


def field(number: int, value: bytes | float | int) -> bytes:
    """One field: bytes length-delimited (a string, a message), a float as float32, an int or a
    bool as a varint (a negative one in ten bytes, as protobuf writes an int32 or int64)."""
    if isinstance(value, bytes):
        return varint(number << 3 | LENGTH_DELIMITED) + varint(len(value)) + value
    if isinstance(value, float):
        return varint(number << 3 | FIXED32) + struct.pack("<f", value)
    return varint(number << 3) + varint(int(value) & 0xFFFF_FFFF_FFFF_FFFF)


def fields(number: int, values: list[bytes] | list[int]) -> bytes:
    """A repeated field, one value after another (unpacked, which every reader accepts)."""
    return b"".join(field(number, value) for value in values)


def varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
