"""The real GeoBrowse sample photos, opened the ways tests need them."""

from __future__ import annotations

import io

from PIL import Image

from arena.contenders.base import ContenderImage
from tests.conftest import SAMPLE_DIR

SAMPLE = SAMPLE_DIR / "images"


def photo(name: str) -> Image.Image:
    with Image.open(SAMPLE / name) as im:
        return im.convert("RGB")


def contender_photo(name: str) -> ContenderImage:
    im = photo(name)
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=90)
    return ContenderImage(buf.getvalue(), im.width, im.height)
