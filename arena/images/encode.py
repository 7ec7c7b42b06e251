"""The one JPEG encoder for every image that leaves the server.

Pillow's JPEG writer copies `image.info["comment"]` (a COM segment) from
whatever file the image was decoded from, and `convert`/`copy` carry `info`
along; a comment holding GPS text or an HTML polyglot would then reach the
public `/images` file, contenders' requests and GATE's crops. Encoding a copy
whose `info` is emptied writes pixels only: SOI, the JFIF header libjpeg
always writes (version and density, no thumbnail), tables, frame, scan, EOI.
"""

from __future__ import annotations

import io

from PIL import Image


def pixels_only_jpeg(image: Image.Image, quality: int = 90, optimize: bool = False) -> bytes:
    """`image` as a baseline JPEG carrying no metadata: no COM, no EXIF/XMP/ICC (APPn) segment."""
    clean = image.convert("RGB")  # always a new image object, so clearing its info touches no caller's
    clean.info.clear()
    out = io.BytesIO()
    clean.save(out, "JPEG", quality=quality, optimize=optimize)
    return out.getvalue()


def jpeg_segments(data: bytes) -> list[tuple[int, bytes]]:
    """The (marker, payload) segments of a JPEG up to its first scan, then the scan and EOI markers.

    Used to check that an encoded file holds nothing but pixels."""
    if data[:2] != b"\xff\xd8":
        raise ValueError("not a JPEG: no SOI marker")
    segments: list[tuple[int, bytes]] = [(0xD8, b"")]
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            raise ValueError(f"no marker at byte {pos}")
        marker = data[pos + 1]
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        segments.append((marker, data[pos + 4 : pos + 2 + length]))
        pos += 2 + length
        if marker == 0xDA:  # start of scan: entropy-coded data up to EOI follows
            end = data.rfind(b"\xff\xd9")
            if end != len(data) - 2:
                raise ValueError("bytes after the end-of-image marker")
            segments.append((0xD9, b""))
            return segments
    raise ValueError("no scan in the JPEG")
