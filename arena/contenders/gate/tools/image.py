"""GATE's think-with-image tools: crop, rotate, auxiliary lines, super-resolution
and pixel analysis, as the agent sees them.

Each takes image ids from the trajectory's registry, runs the operation from
`arena.vision.ops` off the event loop and registers what it makes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from PIL import Image

from arena.contenders.base import ToolSpec
from arena.contenders.gate.registry import ImageRegistry
from arena.contenders.gate.tools.base import ImageToolError, Tool, ToolResult
from arena.vision.ops import (
    DRAW_COLOURS,
    FULL_BOX,
    SUPER_RESOLUTION_METHOD,
    ImageOpError,
    auxiliary_lines,
    crop,
    pixel_analysis,
    rotate,
    super_resolution,
)

_IMAGE_ID = {"type": "string", "description": "id of the image to work on, e.g. img_0 (the photo)", "default": "img_0"}
_BOX = {
    "type": "array",
    "items": {"type": "number"},
    "minItems": 4,
    "maxItems": 4,
    "description": (
        "region [x0, y0, x1, y1] as fractions of width and height (0..1), "
        "e.g. [0.5, 0, 1, 0.5] is the top-right quarter"
    ),
}


def image_tools(timeout: float = 20.0) -> list[Tool]:
    """The five think-with-image tools, ready for the agent."""
    specs = [
        (
            ToolSpec(
                "crop",
                "Cut out a region of an image to look at it more closely. Returns a new image id.",
                _schema({"image": _IMAGE_ID, "box": _BOX}, ["box"]),
            ),
            _run_crop,
        ),
        (
            ToolSpec(
                "rotate",
                "Rotate an image counter-clockwise by the given degrees (negative: clockwise), "
                "e.g. to level a tilted photo or read sideways text. Returns a new image id.",
                _schema(
                    {
                        "image": _IMAGE_ID,
                        "degrees": {"type": "number", "minimum": -360, "maximum": 360},
                        "expand": {
                            "type": "boolean",
                            "default": True,
                            "description": "grow the canvas so no corner is cut off",
                        },
                    },
                    ["degrees"],
                ),
            ),
            _run_rotate,
        ),
        (
            ToolSpec(
                "auxiliary_lines",
                "Draw lines, boxes or a grid on a copy of an image to reason about "
                "alignment, perspective, shadows or positions. Returns a new image id.",
                _schema(
                    {
                        "image": _IMAGE_ID,
                        "lines": {
                            "type": "array",
                            "items": {**_BOX, "description": "[x0, y0, x1, y1] fractions"},
                            "maxItems": 32,
                            "default": [],
                        },
                        "boxes": {"type": "array", "items": _BOX, "maxItems": 32, "default": []},
                        "grid": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": 16,
                            "default": 0,
                            "description": "draw an n x n grid (0: none)",
                        },
                        "color": {"type": "string", "enum": list(DRAW_COLOURS), "default": "red"},
                    },
                    [],
                ),
            ),
            _run_auxiliary_lines,
        ),
        (
            ToolSpec(
                "super_resolution",
                "Enlarge a region 2x or 4x to read small text or signs. Method: "
                f"{SUPER_RESOLUTION_METHOD}; it sharpens but cannot invent detail. Returns a new image id.",
                _schema(
                    {
                        "image": _IMAGE_ID,
                        "box": {**_BOX, "default": list(FULL_BOX)},
                        "factor": {"type": "integer", "enum": [2, 4], "default": 2},
                    },
                    [],
                ),
            ),
            _run_super_resolution,
        ),
        (
            ToolSpec(
                "pixel_analysis",
                "Measure a region's colours and texture: dominant colours with names, "
                "brightness, saturation, hue histogram, edge density, and colour-heuristic sky and "
                "vegetation fractions (e.g. soil colour, vegetation, climate cues).",
                _schema({"image": _IMAGE_ID, "box": {**_BOX, "default": list(FULL_BOX)}}, []),
            ),
            _run_pixel_analysis,
        ),
    ]
    return [Tool(spec, _threaded(run), timeout) for spec, run in specs]


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _threaded(
    run: Callable[[dict[str, Any], ImageRegistry], ToolResult],
) -> Callable[[dict[str, Any], ImageRegistry], Awaitable[ToolResult]]:
    # Pillow/numpy work runs off the event loop so the other contender keeps streaming.
    async def runner(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        try:
            return await asyncio.to_thread(run, args, registry)
        except ImageOpError as exc:  # the model reads how to fix its arguments
            raise ImageToolError(str(exc)) from None

    return runner


def _produced(registry: ImageRegistry, image: Image.Image, note: str) -> ToolResult:
    entry = registry.add(image, note)
    return ToolResult(observation=f"Produced {entry.describe()}.", images=(entry,))


def _fmt_box(box: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in box) + "]"


def _run_crop(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
    src = registry.get(args["image"])
    return _produced(registry, crop(src.image, args["box"]), f"crop {_fmt_box(args['box'])} of {src.id}")


def _run_rotate(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
    src = registry.get(args["image"])
    out = rotate(src.image, args["degrees"], args["expand"])
    return _produced(registry, out, f"{src.id} rotated {args['degrees']:g}° counter-clockwise")


def _run_auxiliary_lines(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
    src = registry.get(args["image"])
    out = auxiliary_lines(src.image, args["lines"], args["boxes"], args["color"], args["grid"])
    parts = [f"{len(args['lines'])} line(s)", f"{len(args['boxes'])} box(es)"]
    if args["grid"]:
        parts.append(f"a {args['grid']}x{args['grid']} grid")
    return _produced(registry, out, f"{src.id} with {', '.join(parts)} in {args['color']}")


def _run_super_resolution(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
    src = registry.get(args["image"])
    out = super_resolution(src.image, args["box"], args["factor"])
    return _produced(
        registry, out, f"{args['factor']}x enlargement of {_fmt_box(args['box'])} of {src.id} (Lanczos + unsharp mask)"
    )


def _run_pixel_analysis(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
    src = registry.get(args["image"])
    stats = pixel_analysis(src.image, args["box"])
    colours = ", ".join(f"{c['name']} {c['share']:.0%}" for c in stats["dominant_colours"])
    summary = (
        f"{src.id} {_fmt_box(args['box'])}: {colours}; brightness {stats['brightness']:.2f}, "
        f"saturation {stats['saturation']:.2f}, edges {stats['edge_density']:.2f}, "
        f"sky {stats['sky_fraction']:.0%}, vegetation {stats['vegetation_fraction']:.0%}"
    )
    return ToolResult(observation=json.dumps(stats, ensure_ascii=False), summary=summary)
