"""The image registry: ids, storage, limits, what the model receives."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image

from arena.contenders.gate.registry import (
    MAX_TOTAL_PIXELS,
    ImageRegistry,
    contender_image,
)
from arena.contenders.gate.tools.base import ImageToolError
from arena.images.store import LocalImageStore
from arena.vision.ops import crop, super_resolution


class TestImageRegistry:
    def test_ids_follow_the_photo_and_images_are_stored(self, street: Image.Image, tmp_path: Path) -> None:
        store = LocalImageStore(tmp_path)
        registry = ImageRegistry(street, store, photo_sha256="ab" * 32)
        first = registry.add(crop(street, [0, 0, 0.5, 0.5]), "crop of img_0")
        second = registry.add(super_resolution(street, [0.6, 0.5, 0.9, 0.8], 2), "2x of img_0")
        assert registry.ids() == ["img_0", "img_1", "img_2"]
        assert registry.get("img_0").sha256 == "ab" * 32
        assert store.exists(first.sha256) and store.exists(second.sha256) and first.sha256 != second.sha256
        with Image.open(store.path(second.sha256)) as stored:
            assert stored.format == "JPEG" and stored.size == (768, 402)
        assert first.describe() == "img_1 (640x336 px): crop of img_0"

    def test_unknown_ids_name_the_known_ones(self, street: Image.Image) -> None:
        registry = ImageRegistry(street)
        for bad in ("img_5", "/etc/passwd", "https://example.com/a.jpg", 3):
            with pytest.raises(ImageToolError, match="the images are: img_0"):
                registry.get(bad)

    def test_total_pixels_are_bounded(self, street: Image.Image) -> None:
        registry = ImageRegistry(street)
        big = Image.new("RGB", (4000, 4000))
        added = 0
        with pytest.raises(ImageToolError, match="too large in total"):
            while True:
                registry.add(big, "big")
                added += 1
        assert added == (MAX_TOTAL_PIXELS - street.width * street.height) // (4000 * 4000)

    def test_model_receives_a_bounded_jpeg(self, street: Image.Image) -> None:
        registry = ImageRegistry(street)
        huge = registry.add(super_resolution(street, [0, 0, 0.75, 0.75], 4), "4x")
        sent = contender_image(huge)
        assert (sent.width, sent.height) == (2048, 1073)  # 3840x2012 scaled down
        assert sent.jpeg[:3] == b"\xff\xd8\xff"

    def test_concurrent_adds_get_distinct_ids(self, street: Image.Image, tmp_path: Path) -> None:
        # An image tool that timed out keeps running in its worker thread and registers its
        # image while the next call registers another: both took the same id, one was lost.
        class SlowStore(LocalImageStore):
            def put(self, data: bytes, ext: str = "jpg") -> str:
                time.sleep(0.2)
                return super().put(data, ext)

        registry = ImageRegistry(street, SlowStore(tmp_path))
        images = [crop(street, [0, 0, 0.5, 0.5]), crop(street, [0.5, 0.5, 1, 1]), crop(street, [0, 0.5, 0.5, 1])]
        with ThreadPoolExecutor(3) as pool:
            entries = list(pool.map(lambda im: registry.add(im, "crop"), images))
        assert sorted(e.id for e in entries) == ["img_1", "img_2", "img_3"]
        assert registry.ids() == ["img_0", "img_1", "img_2", "img_3"]
        assert {registry.get(e.id).sha256 for e in entries} == {e.sha256 for e in entries}
