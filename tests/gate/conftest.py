"""Shared fixtures for GATE tests: the real GeoBrowse sample photos."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "geobrowse-sample" / "images"
if not SAMPLE.exists():  # CI clones next to a copy of shared/
    SAMPLE = Path("/work/shared/data/geobrowse-sample/images")


def photo(name: str) -> Image.Image:
    with Image.open(SAMPLE / name) as im:
        return im.convert("RGB")


@pytest.fixture
def load_photo():
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
