"""The OCR engine the baselines read photos with: RapidOCR on ONNX Runtime.

`rapidocr-onnxruntime` ships its detection, orientation and recognition
models (PP-OCRv4, Chinese + Latin alphabet) inside the wheel, so reading needs
no network. Loading takes a second and a few hundred MB, so one engine per
process is built on first use; a lock serialises calls because the CPU is the
bottleneck anyway and the engine object is not documented as thread-safe.
Async callers go through one dedicated worker thread, so a queue of OCR
requests from many battles never occupies the event loop's default
executor, which the rest of the app (image intake, ...) needs.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

# Views longer than this are shrunk before OCR: detection cost grows with the
# area, and RapidOCR would cap the long side at 2000 px anyway.
DEFAULT_MAX_SIDE = 2000


@dataclass(frozen=True)
class OcrLine:
    """A line of text, the recogniser's confidence, and where it was found
    (pixel box in the image that was read: x0, y0, x1, y1)."""

    text: str
    confidence: float
    box: tuple[int, int, int, int]


class OcrEngine:
    """Reads text lines from PIL images; thread-safe, loaded lazily."""

    def __init__(self, *, max_side: int = DEFAULT_MAX_SIDE, min_score: float = 0.5) -> None:
        self.max_side = max_side
        self.min_score = min_score
        self._engine: Any = None
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ocr")

    @property
    def loaded(self) -> bool:
        return self._engine is not None

    def load(self) -> None:
        """Load the models now (about a second) instead of on the first read."""
        with self._lock:
            if self._engine is None:
                self._engine = _load_rapidocr(self.min_score)

    def read(self, image: Image.Image) -> list[OcrLine]:
        """Blocking: the text lines of `image`, top to bottom."""
        pixels, scale = self._prepare(image)
        self.load()
        with self._lock:
            result, _elapsed = self._engine(pixels)
        lines = []
        for box, text, score in result or ():
            text = str(text).strip()
            if not text or float(score) < self.min_score:
                continue
            xs = [p[0] / scale for p in box]
            ys = [p[1] / scale for p in box]
            lines.append(
                OcrLine(text, round(float(score), 3), (int(min(xs)), int(min(ys)), int(max(xs)), int(max(ys))))
            )
        lines.sort(key=lambda ln: (ln.box[1], ln.box[0]))
        return lines

    async def aread(self, image: Image.Image) -> list[OcrLine]:
        """Read in the OCR worker thread so the event loop keeps serving."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, self.read, image)

    def _prepare(self, image: Image.Image) -> tuple[np.ndarray, float]:
        image = image.convert("RGB")
        scale = 1.0
        long_side = max(image.size)
        if long_side > self.max_side:
            scale = self.max_side / long_side
            image = image.resize(
                (max(1, round(image.width * scale)), max(1, round(image.height * scale))), Image.Resampling.LANCZOS
            )
        # RapidOCR follows OpenCV's channel order.
        return np.ascontiguousarray(np.asarray(image)[:, :, ::-1]), scale


_SHARED: OcrEngine | None = None
_SHARED_LOCK = threading.Lock()


def shared_engine() -> OcrEngine:
    """The process-wide engine: every baseline contender shares one."""
    global _SHARED  # a cache of an expensive, immutable-once-built object
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = OcrEngine()
        return _SHARED


def _load_rapidocr(min_score: float) -> Any:
    from rapidocr_onnxruntime import RapidOCR  # heavy import: onnxruntime, OpenCV

    return RapidOCR(text_score=min_score)
