"""Shared fixtures for GATE tests: the real GeoBrowse sample photos."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from PIL import Image

from arena.contenders.base import ContenderImage
from tests.photos import contender_photo, photo


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
