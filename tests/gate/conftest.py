"""Shared fixtures for GATE tests: the real GeoBrowse sample photos."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from arena.providers.base import ContenderImage

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(os.environ.get("GEOARENA_SHARED", ROOT.parent / "shared")) / "data" / "geobrowse-sample" / "images"


def photo(name: str) -> Image.Image:
    with Image.open(SAMPLE / name) as im:
        return im.convert("RGB")


def contender_photo(name: str) -> ContenderImage:
    im = photo(name)
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=90)
    return ContenderImage(buf.getvalue(), im.width, im.height)


@pytest.fixture
def load_photo() -> Callable[[str], Image.Image]:
    """Open any sample photo by file name."""
    return photo


@pytest.fixture
def street() -> Image.Image:
    """Tokyo street: trees, a car, a fence, road markings; no sky."""
    return photo("level1-1.jpg")


@pytest.fixture
def town() -> Image.Image:
    """A hillside town under an overcast sky, blue roofs, mountains."""
    return photo("level1-55.jpg")


@pytest.fixture
def street_jpeg() -> ContenderImage:
    return contender_photo("level1-1.jpg")
