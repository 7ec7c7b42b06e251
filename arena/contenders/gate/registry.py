"""The image registry of one GATE trajectory.

Every image the agent can refer to has a short id: `img_0` is the photo of
the battle, tools add `img_1`, `img_2`, ... Tools take ids, never paths or
URLs, so a model cannot point a tool at a file. Each produced image is also
written to the image store, so the voter's page can show it from
`/images/{sha256}`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from arena.contenders.base import ContenderImage
from arena.contenders.gate.tools.base import ImageToolError
from arena.images.encode import pixels_only_jpeg
from arena.images.store import ImageStore
from arena.vision.ops import FULL_BOX, ImageOpError, crop

MAX_IMAGES = 48  # a trajectory is at most a few dozen steps; bound the memory it holds
MAX_TOTAL_PIXELS = 40_000_000  # about 120 MB of RGB per trajectory, whatever the tools make
MODEL_LONG_SIDE = 2048  # images sent to the model are scaled down to this


@dataclass(frozen=True)
class RegisteredImage:
    id: str
    image: Image.Image
    note: str  # how it was made, e.g. "crop [0.1, 0.2, 0.5, 0.6] of img_0"
    sha256: str  # in the image store; "" when the trajectory has no store

    def describe(self) -> str:
        w, h = self.image.size
        return f"{self.id} ({w}x{h} px): {self.note}"


class ImageRegistry:
    """Ids for the photo and for every image tools produce in one trajectory."""

    def __init__(self, photo: Image.Image, store: ImageStore | None = None, photo_sha256: str = "") -> None:
        self._store = store
        self._images: dict[str, RegisteredImage] = {}
        # Tools add from worker threads, and one that timed out may still be adding
        # while the next call runs: the checks, the new id and the insert go together.
        self._lock = threading.Lock()
        self._images["img_0"] = RegisteredImage(
            "img_0", photo.convert("RGB"), "the photo of the question", photo_sha256
        )

    def add(self, image: Image.Image, note: str) -> RegisteredImage:
        """Register a produced image under the next id and store it."""
        with self._lock:
            if len(self._images) >= MAX_IMAGES:
                raise ImageToolError(f"this trajectory already holds {MAX_IMAGES} images; work with the existing ones")
            held = sum(e.image.width * e.image.height for e in self._images.values())
            if held + image.width * image.height > MAX_TOTAL_PIXELS:
                raise ImageToolError(
                    "this trajectory's images are too large in total; work on smaller regions or with the existing "
                    "images"
                )
            image_id = f"img_{len(self._images)}"
            sha = self._store.put(jpeg_bytes(image), "jpg") if self._store is not None else ""
            entry = RegisteredImage(image_id, image.convert("RGB"), note, sha)
            self._images[image_id] = entry
            return entry

    def publish(self, image_id: object, box: Sequence[float] | None = None) -> str:
        """The image-store digest of an image (or of a region of it), storing
        the region first: what the arena serves at `/images/{sha256}`."""
        entry = self.get(image_id)
        if self._store is None:
            raise ImageToolError("this trajectory keeps no images, so none can be searched by address")
        if box is None or tuple(box) == FULL_BOX:
            return entry.sha256 or self._store.put(jpeg_bytes(entry.image), "jpg")
        try:
            region = crop(entry.image, box)
        except ImageOpError as exc:
            raise ImageToolError(str(exc)) from None
        return self._store.put(jpeg_bytes(region), "jpg")

    def get(self, image_id: object) -> RegisteredImage:
        if not isinstance(image_id, str) or image_id not in self._images:
            known = ", ".join(self._images)
            raise ImageToolError(f"unknown image id {image_id!r}; the images are: {known}")
        return self._images[image_id]

    def ids(self) -> list[str]:
        return list(self._images)

    def __len__(self) -> int:
        return len(self._images)


def jpeg_bytes(image: Image.Image, quality: int = 90) -> bytes:
    # a fetched web image may carry a JPEG comment: what GATE stores and sends is pixels only
    return pixels_only_jpeg(image, quality)


def contender_image(entry: RegisteredImage, long_side: int = MODEL_LONG_SIDE) -> ContenderImage:
    """The image as a model receives it: JPEG, at most `long_side` pixels."""
    image = entry.image
    if max(image.size) > long_side:
        image = image.copy()
        image.thumbnail((long_side, long_side), Image.Resampling.LANCZOS)
    return ContenderImage(jpeg=jpeg_bytes(image), width=image.width, height=image.height, sha256=entry.sha256)
