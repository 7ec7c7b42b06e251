"""Image operations: crop, rotate, auxiliary lines, super-resolution, pixel
analysis and tilt estimation.

Pure, deterministic functions over Pillow images (numpy for the statistics),
so GATE's tools, its fixed policy and the offline baselines share one
implementation. Regions
are *normalised boxes* `[x0, y0, x1, y1]` in fractions of the width and height
(0 = left/top, 1 = right/bottom), which a model can state without knowing the
pixel size.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

Box = tuple[float, float, float, float]

FULL_BOX: Box = (0.0, 0.0, 1.0, 1.0)
MIN_REGION_PX = 8
MAX_OUTPUT_SIDE = 4096  # a produced image never exceeds this on its long side
SUPER_RESOLUTION_METHOD = "Lanczos resampling + unsharp mask (classical, no learned model)"


class ImageOpError(ValueError):
    """Arguments an operation cannot use; the message says how to fix them."""


# -- the operations --------------------------------------------------------------


def crop(image: Image.Image, box: Sequence[float]) -> Image.Image:
    """The region `box` (normalised) of `image`."""
    return image.crop(pixel_box(image, box))


def rotate(image: Image.Image, degrees: float, expand: bool = True) -> Image.Image:
    """Rotate counter-clockwise by `degrees`; `expand` keeps the corners (black fill)."""
    if not isinstance(degrees, (int, float)) or not -360 <= degrees <= 360:
        raise ImageOpError("degrees must be a number between -360 and 360")
    turned = image.convert("RGB").rotate(
        float(degrees), resample=Image.Resampling.BICUBIC, expand=bool(expand), fillcolor=(0, 0, 0)
    )
    _check_output_size(turned)
    return turned


def auxiliary_lines(
    image: Image.Image,
    lines: Sequence[Sequence[float]] = (),
    boxes: Sequence[Sequence[float]] = (),
    color: str = "red",
    grid: int = 0,
) -> Image.Image:
    """Draw lines (`[x0, y0, x1, y1]`, normalised), boxes and an optional
    `grid` x `grid` mesh over a copy of `image`, to reason about alignment,
    perspective or where things are."""
    if color not in DRAW_COLOURS:
        raise ImageOpError(f"color must be one of {', '.join(DRAW_COLOURS)}")
    if not isinstance(grid, int) or not 0 <= grid <= 16:
        raise ImageOpError("grid must be an integer from 0 (none) to 16")
    if len(lines) + len(boxes) > 64:
        raise ImageOpError("at most 64 lines and boxes together")
    if not lines and not boxes and not grid:
        raise ImageOpError("give at least one of lines, boxes or grid")
    out = image.convert("RGB").copy()
    draw = ImageDraw.Draw(out)
    w, h = out.size
    width = max(2, round(max(w, h) / 300))
    rgb = DRAW_COLOURS[color]
    for i in range(1, grid):
        draw.line([(w * i / grid, 0), (w * i / grid, h)], fill=(255, 255, 255), width=max(1, width // 2))
        draw.line([(0, h * i / grid), (w, h * i / grid)], fill=(255, 255, 255), width=max(1, width // 2))
    for line in lines:
        x0, y0, x1, y1 = _four_fractions(line, "line", allow_any_order=True)
        draw.line([(x0 * w, y0 * h), (x1 * w, y1 * h)], fill=rgb, width=width)
    for box in boxes:
        draw.rectangle(pixel_box(out, box), outline=rgb, width=width)
    return out


def super_resolution(image: Image.Image, box: Sequence[float] = FULL_BOX, factor: int = 2) -> Image.Image:
    """Enlarge a region 2x or 4x: Lanczos resampling then an unsharp mask.

    A classical upscaler, named as such: it makes small text and signs
    easier to read but invents no detail.
    """
    if factor not in (2, 4):
        raise ImageOpError("factor must be 2 or 4")
    region = crop(image, box).convert("RGB")
    w, h = region.size
    if max(w, h) * factor > MAX_OUTPUT_SIDE:
        raise ImageOpError(
            f"the region is {w}x{h} px; {factor}x would exceed {MAX_OUTPUT_SIDE} px: choose a smaller box or factor 2"
        )
    big = region.resize((w * factor, h * factor), Image.Resampling.LANCZOS)
    return big.filter(ImageFilter.UnsharpMask(radius=1.0 * factor, percent=80, threshold=2))


def pixel_analysis(image: Image.Image, box: Sequence[float] = FULL_BOX) -> dict[str, Any]:
    """Colour and texture statistics of a region: dominant colours with names,
    brightness, saturation, a hue histogram, edge density and colour-heuristic
    sky / vegetation fractions (all fractions in 0..1)."""
    region = crop(image, box).convert("RGB")
    region.thumbnail((256, 256), Image.Resampling.BILINEAR)  # statistics, not detail
    rgb = np.asarray(region, dtype=np.float32) / 255.0
    hsv = _rgb_to_hsv(rgb)
    hue, sat, val = hsv[..., 0] * 360.0, hsv[..., 1], hsv[..., 2]
    chromatic = (sat > 0.2) & (val > 0.2)
    bins = np.histogram(hue[chromatic], bins=12, range=(0.0, 360.0))[0]
    total = rgb.shape[0] * rgb.shape[1]
    rows = np.arange(rgb.shape[0])[:, None] < rgb.shape[0] * 0.6
    # Sky: blue hues, or bright near-grey (overcast) in the upper part of the region.
    sky = ((hue >= 185) & (hue <= 250) & (sat > 0.12) & (val > 0.45)) | ((sat < 0.12) & (val > 0.78) & rows)
    vegetation = (hue >= 55) & (hue <= 165) & (sat > 0.18) & (val > 0.12)
    luminance = rgb @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    return {
        "region": [round(float(v), 4) for v in _four_fractions(box, "box")],
        "size_px": list(crop(image, box).size),
        "dominant_colours": dominant_colours(region),
        "brightness": round(float(luminance.mean()), 3),
        "saturation": round(float(sat.mean()), 3),
        "hue_histogram": {f"{i * 30}-{i * 30 + 30}": round(float(c) / total, 3) for i, c in enumerate(bins)},
        "edge_density": round(edge_density(luminance), 3),
        "sky_fraction": round(float(sky.mean()), 3),
        "vegetation_fraction": round(float(vegetation.mean()), 3),
    }


# -- helpers shared with the policy and the agent ----------------------------------


def pixel_box(image: Image.Image, box: Sequence[float]) -> tuple[int, int, int, int]:
    """The pixel rectangle of a normalised box, checked to be a usable region."""
    x0, y0, x1, y1 = _four_fractions(box, "box")
    w, h = image.size
    px = (round(x0 * w), round(y0 * h), round(x1 * w), round(y1 * h))
    if px[2] - px[0] < MIN_REGION_PX or px[3] - px[1] < MIN_REGION_PX:
        raise ImageOpError(
            f"box {list(box)} is only {px[2] - px[0]}x{px[3] - px[1]} px of a {w}x{h} image; "
            f"a region needs at least {MIN_REGION_PX} px each way"
        )
    return px


def estimate_tilt(image: Image.Image) -> tuple[float, float]:
    """The camera roll as the angle to pass to `rotate` to level the photo
    (degrees, counter-clockwise positive), and the share of edge energy that
    supports it.

    Vertical structures (walls, poles, window frames) stay vertical in a
    level photo whatever the perspective, so we take the peak orientation of
    long, straight, near-vertical edges; a rolled camera shifts it by the roll
    angle. The structure tensor over 9x9 windows keeps straight edges
    (coherent orientation) and drops texture such as foliage.
    """
    grey = image.convert("L")
    grey.thumbnail((640, 640), Image.Resampling.BILINEAR)
    grey = grey.filter(ImageFilter.GaussianBlur(1.0))
    lum = np.asarray(grey, dtype=np.float32) / 255.0
    gx, gy = _sobel(lum)
    jxx, jyy, jxy = _box_mean(gx * gx, 4), _box_mean(gy * gy, 4), _box_mean(gx * gy, 4)
    energy = jxx + jyy
    coherence = np.sqrt((jxx - jyy) ** 2 + 4 * jxy**2) / np.maximum(energy, 1e-6)
    # dominant gradient direction, folded to [-90, 90); a vertical edge's gradient is horizontal
    angle = (0.5 * np.degrees(np.arctan2(2 * jxy, jxx - jyy)) + 90.0) % 180.0 - 90.0
    weight = energy * coherence
    edges = (coherence > 0.9) & (energy > np.percentile(energy, 80))
    vertical = edges & (np.abs(angle) < 25.0)
    if vertical.sum() < 100:
        return 0.0, 0.0
    hist, bins = np.histogram(angle[vertical], bins=100, range=(-25.0, 25.0), weights=weight[vertical])
    peak = int(np.argmax(np.convolve(hist, np.ones(3) / 3, "same")))
    centre = (bins[peak] + bins[peak + 1]) / 2
    near = vertical & (np.abs(angle - centre) < 1.0)
    tilt = float(np.average(angle[near], weights=weight[near]))
    support = float(weight[near].sum() / weight[vertical].sum())
    # image rows grow downwards, so the gradient angle equals the clockwise roll
    return round(tilt, 2), round(support, 3)


def edge_density(luminance: np.ndarray) -> float:
    """Share of pixels on an edge (Sobel magnitude above a fixed threshold)."""
    gx, gy = _sobel(luminance)
    return float((np.hypot(gx, gy) > 0.5).mean())


def dominant_colours(image: Image.Image, count: int = 5) -> list[dict[str, Any]]:
    """The `count` main colours (median cut, deterministic) with a name and share."""
    quant = image.convert("RGB").quantize(colors=count, method=Image.Quantize.MEDIANCUT)
    palette = quant.getpalette() or []
    counts = sorted(quant.getcolors() or [], reverse=True)
    total = sum(c for c, _ in counts) or 1
    out = []
    for n, index in counts[:count]:
        start = int(index) * 3  # type: ignore[call-overload]  # a palette index for "P" images
        r, g, b = palette[start : start + 3]
        out.append({"name": colour_name((r, g, b)), "hex": f"#{r:02x}{g:02x}{b:02x}", "share": round(n / total, 3)})
    return out


def colour_name(rgb: tuple[int, int, int]) -> str:
    """A plain English name for a colour: grey levels by lightness, else a hue
    family qualified as light, dark or greyish."""
    r, g, b = (c / 255.0 for c in rgb)
    h, light, s = colorsys.rgb_to_hls(r, g, b)
    if s < 0.15 or light < 0.08 or light > 0.94:
        if light < 0.12:
            return "black"
        if light > 0.9:
            return "white"
        return "dark grey" if light < 0.35 else "grey" if light < 0.65 else "light grey"
    deg = h * 360
    family = next(name for limit, name in _HUE_FAMILIES if deg < limit)
    if family in ("orange", "yellow") and light < 0.4:
        family = "brown" if family == "orange" else "olive"
    if light < (0.18 if family in ("brown", "olive") else 0.3):
        return f"dark {family}"
    if light > 0.72:
        return f"light {family}"
    if s < 0.35:
        return f"greyish {family}"
    return family


_HUE_FAMILIES = [
    (15, "red"),
    (40, "orange"),
    (68, "yellow"),
    (160, "green"),
    (195, "cyan"),
    (255, "blue"),
    (290, "purple"),
    (335, "pink"),
    (361, "red"),
]

DRAW_COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (230, 25, 25),
    "yellow": (255, 220, 0),
    "cyan": (0, 220, 255),
    "magenta": (255, 0, 200),
    "white": (255, 255, 255),
    "black": (0, 0, 0),
}


def _four_fractions(value: Sequence[float], what: str, allow_any_order: bool = False) -> Box:
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 4
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise ImageOpError(f"{what} must be four numbers [x0, y0, x1, y1] between 0 and 1")
    x0, y0, x1, y1 = (float(v) for v in value)
    if not all(0.0 <= v <= 1.0 for v in (x0, y0, x1, y1)):
        raise ImageOpError(f"{what} {list(value)}: coordinates are fractions of the image between 0 and 1, not pixels")
    if not allow_any_order and (x1 <= x0 or y1 <= y0):
        raise ImageOpError(f"{what} {list(value)}: need x0 < x1 and y0 < y1")
    return x0, y0, x1, y1


def _check_output_size(image: Image.Image) -> None:
    if max(image.size) > MAX_OUTPUT_SIDE:
        raise ImageOpError(f"the result would be {image.size[0]}x{image.size[1]} px, over {MAX_OUTPUT_SIDE}")


def _sobel(lum: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.pad(lum, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    return gx, gy


def _box_mean(a: np.ndarray, r: int) -> np.ndarray:
    """Mean over (2r+1) x (2r+1) windows, by summed-area table."""
    k = 2 * r + 1
    c = np.pad(np.pad(a, r, mode="edge").cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    out: np.ndarray = (c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]) / (k * k)
    return out


def _rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    mx = rgb.max(axis=-1)
    mn = rgb.min(axis=-1)
    delta = mx - mn
    safe = np.where(delta == 0, 1.0, delta)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    hue = np.where(mx == r, ((g - b) / safe) % 6, np.where(mx == g, (b - r) / safe + 2, (r - g) / safe + 4))
    hue = np.where(delta == 0, 0.0, hue / 6.0)
    sat = np.where(mx == 0, 0.0, delta / np.where(mx == 0, 1.0, mx))
    return np.stack([hue, sat, mx], axis=-1)
