"""`ocr-geolocator` and `ocr-geolocator+gate`: the offline baseline contenders.

Both read the photo with OCR, detect the scripts, match the words against
the gazetteer and rank places (see `arena.geo`). The `+gate` variant first
runs GATE's fixed policy (crops, rotation correction, 2x super-resolution),
reads every view, shows each view as a tool step with its thumbnail, and
ranks the merged text. Comparing the two in battles asks: does tool use help?
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from arena.contenders.base import (
    ContenderError,
    ContenderEvent,
    ContenderImage,
    TextDelta,
    ToolStep,
)
from arena.contenders.baselines.answer import render_answer
from arena.contenders.baselines.ocr import OcrEngine, OcrLine
from arena.geo.gazetteer import UNSPACED, Gazetteer, fold, load_gazetteer
from arena.geo.language import guess_language
from arena.geo.ranking import Ranking, TextLine, rank_places
from arena.geo.scripts import script_of
from arena.images.encode import pixels_only_jpeg
from arena.images.store import ImageStore
from arena.vision.policy import fixed_policy_views

THUMBNAIL_SIDE = 512
MAX_OBSERVED_LINES = 8  # lines quoted in one step's observation
# Letters or digits a line needs to count as text: two Han characters can
# name a city (北京); two Latin letters ("es", "OO") are mostly texture.
MIN_LINE_CHARS = {"unspaced": 2, "other": 3}


@dataclass(frozen=True)
class GeolocatorOptions:
    """Thresholds a pool file may tune under `options`."""

    min_confidence: float = 0.6  # OCR confidence a line needs to be matched
    prior_weight: float = 1.0  # weight of the script prior against gazetteer evidence
    use_question: bool = True  # let places named in the question count (at half weight)
    top: int = 3  # candidates shown

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> GeolocatorOptions:
        known = {k: options[k] for k in ("min_confidence", "prior_weight", "use_question", "top") if k in options}
        unknown = sorted(set(options) - set(known) - {"stall_timeout"})
        if unknown:
            raise ValueError(f"ocr-geolocator: unknown options {', '.join(unknown)}")
        opts = cls(**known)
        if not 0 <= opts.min_confidence <= 1 or opts.prior_weight < 0 or not 1 <= opts.top <= 10:
            raise ValueError("ocr-geolocator: min_confidence must be in [0, 1], prior_weight >= 0, top in 1..10")
        return opts


@dataclass(frozen=True)
class View:
    """One image the contender reads: the photo itself or a policy view."""

    label: str
    image: Image.Image
    tool: str
    args: dict[str, Any]


ViewPolicy = Callable[[Image.Image], Sequence[Any]]  # returns PolicyView-like objects


@dataclass
class OcrGeolocator:
    """The baseline contender. With `gate`, reads the fixed policy's views."""

    name: str
    engine: OcrEngine
    images: ImageStore | None = None
    gate: bool = False
    options: GeolocatorOptions = field(default_factory=GeolocatorOptions)
    policy: ViewPolicy | None = None  # None with gate: GATE's fixed policy

    async def stream(self, prompt: str, image: ContenderImage) -> AsyncIterator[ContenderEvent]:
        photo = await asyncio.to_thread(_decode, image)
        gazetteer_ready = asyncio.create_task(asyncio.to_thread(load_gazetteer))
        try:
            lines: list[OcrLine] = []
            views = 0
            async for view, view_lines in self.read(photo):
                views += 1
                lines.extend(view_lines)
                if self.gate:
                    yield await self._step(view, view_lines)
            gazetteer = await gazetteer_ready
        finally:
            if not gazetteer_ready.done():
                gazetteer_ready.cancel()
        merged = merge_lines(lines)
        ranking = self.rank(merged, prompt, gazetteer)
        for paragraph in render_answer(ranking, merged, views=views, language=guess_language(prompt)):
            yield TextDelta(paragraph + "\n\n")

    async def read(self, photo: Image.Image) -> AsyncIterator[tuple[View, list[OcrLine]]]:
        """OCR each view this contender looks at: the photo alone, or with
        `gate` every view of GATE's fixed policy (which includes the photo)."""
        if not self.gate:
            yield View("photo", photo, "ocr", {}), await self._read(photo)
            return
        for view in await self._policy_views(photo):
            yield view, await self._read(view.image)

    def rank(self, lines: Sequence[TextLine], prompt: str, gazetteer: Gazetteer | None = None) -> Ranking:
        """Rank places from merged lines (and the question, unless turned off)."""
        return rank_places(
            lines,
            gazetteer or load_gazetteer(),
            question=prompt if self.options.use_question else "",
            min_confidence=self.options.min_confidence,
            prior_weight=self.options.prior_weight,
            top=self.options.top,
        )

    async def _read(self, image: Image.Image) -> list[OcrLine]:
        try:
            return await self.engine.aread(image)
        except Exception as exc:  # onnxruntime/OpenCV errors are not ours to type
            raise ContenderError(f"the OCR engine failed: {type(exc).__name__}: {exc}") from exc

    async def _policy_views(self, photo: Image.Image) -> list[View]:
        policy = self.policy or fixed_policy_views
        try:
            produced = await asyncio.to_thread(policy, photo)
        except Exception as exc:  # a bug in a tool must not take the battle's server down
            raise ContenderError(f"GATE's fixed policy failed: {type(exc).__name__}: {exc}") from exc
        return [View(v.label, v.image, v.tool, dict(v.args)) for v in produced]

    async def _step(self, view: View, lines: Sequence[OcrLine]) -> ToolStep:
        refs: tuple[str, ...] = ()
        if self.images is not None:
            jpeg = await asyncio.to_thread(thumbnail_jpeg, view.image)
            refs = (await asyncio.to_thread(self.images.put, jpeg, "jpg"),)
        return ToolStep(tool=view.tool, args=view.args, observation=observe(view.label, lines), image_refs=refs)


def merge_lines(lines: Sequence[OcrLine]) -> list[TextLine]:
    """One entry per distinct text, at its best confidence; a line contained
    in a longer one read elsewhere (overlapping crops) is dropped, and so is a
    line too short to be writing rather than texture read as letters."""
    best: dict[str, TextLine] = {}
    for ln in lines:
        key = fold(ln.text).strip()
        if not _enough_text(key):
            continue
        if key not in best or ln.confidence > best[key].confidence:
            best[key] = TextLine(ln.text, ln.confidence)
    keys = sorted(best, key=len, reverse=True)
    kept: list[str] = []
    for key in keys:
        if not any(_fragment_of(key, longer) and best[longer].confidence >= best[key].confidence for longer in kept):
            kept.append(key)
    return [best[k] for k in kept]


def _enough_text(key: str) -> bool:
    unspaced = sum(script_of(ch) in UNSPACED for ch in key)
    return unspaced >= MIN_LINE_CHARS["unspaced"] or sum(ch.isalnum() for ch in key) >= MIN_LINE_CHARS["other"]


def _fragment_of(key: str, longer: str) -> bool:
    """`key` is part of `longer`, allowing one misread character at either end
    (a crop that cuts "Qingdao" reads "Qir")."""
    if key in longer:
        return True
    return len(key) >= 4 and (key[:-1] in longer or key[1:] in longer)


def observe(label: str, lines: Sequence[OcrLine]) -> str:
    """What OCR read in one view, in a sentence a voter can scan."""
    if not lines:
        return f"{label}: no legible text"
    quoted = "; ".join(f"“{ln.text}” ({ln.confidence:.2f})" for ln in lines[:MAX_OBSERVED_LINES])
    more = f"; +{len(lines) - MAX_OBSERVED_LINES} more" if len(lines) > MAX_OBSERVED_LINES else ""
    return f"{label}: read {len(lines)} line{'s' if len(lines) != 1 else ''}: {quoted}{more}"


def thumbnail_jpeg(image: Image.Image, side: int = THUMBNAIL_SIDE) -> bytes:
    thumb = image.convert("RGB")
    thumb.thumbnail((side, side), Image.Resampling.LANCZOS)
    return pixels_only_jpeg(thumb, 82)


def _decode(image: ContenderImage) -> Image.Image:
    try:
        photo = Image.open(io.BytesIO(image.jpeg))
        photo.load()
    except Exception as exc:  # intake validated it; a failure here is a bug upstream
        raise ContenderError(f"could not decode the photo: {exc}") from exc
    return photo.convert("RGB")
