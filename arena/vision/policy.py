"""GATE's fixed policy (GeoBrowse, appendix B): a deterministic set of views
of a photo that a downstream step (e.g. OCR) reads instead of the photo alone.

Views: the full photo; the full photo levelled when the camera is visibly
rolled; then five crops (four corners and the centre) at scales 0.8 and 0.6,
each enlarged 2x by `super_resolution`. Crops are taken from the levelled
photo when it was levelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import PIL.Image

from arena.vision.ops import MAX_OUTPUT_SIDE, estimate_tilt, rotate, super_resolution

CROP_SCALES = (0.8, 0.6)
SUPER_RESOLUTION_FACTOR = 2
# Level the photo only for a clear, moderate roll: small angles are noise and
# large ones are more likely deliberate framing than a tilted camera.
# On the GeoBrowse sample, level photos read |tilt| <= 2.4 and the estimate
# of a known roll (3 to 10 degrees) is off by 1.5 degrees on average
# (90th percentile 2.9), hence 3.
MIN_TILT_DEGREES = 3.0
MAX_TILT_DEGREES = 20.0
MIN_TILT_SUPPORT = 0.05


@dataclass(frozen=True)
class PolicyView:
    label: str  # e.g. "full", "top-left crop 0.8 + 2x SR"
    image: PIL.Image.Image
    tool: str  # "crop" | "rotate" | "super_resolution" | "original"
    args: dict[str, Any]


def fixed_policy_views(image: PIL.Image.Image) -> list[PolicyView]:
    """The full photo, its levelled version when needed, and ten 2x crops."""
    photo = image.convert("RGB")
    views = [PolicyView("full", photo, "original", {})]
    tilt, support = estimate_tilt(photo)
    base = photo
    levelled_by = 0.0
    if MIN_TILT_DEGREES <= abs(tilt) <= MAX_TILT_DEGREES and support >= MIN_TILT_SUPPORT:
        # expand=False keeps the frame, so crops stay comparable with the original's
        base = rotate(photo, tilt, expand=False)
        levelled_by = tilt
        views.append(PolicyView(f"full rotated {tilt:+.1f}°", base, "rotate", {"degrees": tilt, "expand": False}))
    for scale in CROP_SCALES:
        for position, box in crop_boxes(scale):
            factor = _factor_for(base, box)
            label = f"{position} crop {scale:g}" + (f" + {factor}x SR" if factor > 1 else "")
            args: dict[str, Any] = {"box": list(box), "factor": factor, "scale": scale, "position": position}
            if levelled_by:
                args["rotated_degrees"] = levelled_by
            if factor > 1:
                view = super_resolution(base, box, factor)
                views.append(PolicyView(label, view, "super_resolution", args))
            else:
                views.append(PolicyView(label, base.crop(_pixels(base, box)), "crop", args))
    return views


def searched_views(views: list[PolicyView]) -> list[PolicyView]:
    """The seven views image search runs on, in order: the full view (the
    levelled one when the photo was levelled), the five crops at the first
    scale, and the centre crop at the second.

    Appendix B searches "the seven views"; this is our reading of which seven:
    the widest ones, as a reverse image search matches whole scenes better
    than small details."""
    full = next((v for v in views if v.tool == "rotate"), views[0])
    wide = [v for v in views if v.args.get("scale") == CROP_SCALES[0]]
    centre = [v for v in views if v.args.get("scale") == CROP_SCALES[1] and v.args.get("position") == "centre"]
    return [full, *wide, *centre]


def crop_boxes(scale: float) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Normalised boxes of the four corner crops and the centre crop at `scale`."""
    m = round(1.0 - scale, 6)
    c = round(m / 2, 6)
    return [
        ("top-left", (0.0, 0.0, scale, scale)),
        ("top-right", (m, 0.0, 1.0, scale)),
        ("bottom-left", (0.0, m, scale, 1.0)),
        ("bottom-right", (m, m, 1.0, 1.0)),
        ("centre", (c, c, 1.0 - c, 1.0 - c)),
    ]


def _factor_for(image: PIL.Image.Image, box: tuple[float, float, float, float]) -> int:
    # Very large photos are not enlarged past the tools' output cap.
    x0, y0, x1, y1 = _pixels(image, box)
    return SUPER_RESOLUTION_FACTOR if max(x1 - x0, y1 - y0) * SUPER_RESOLUTION_FACTOR <= MAX_OUTPUT_SIDE else 1


def _pixels(image: PIL.Image.Image, box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    w, h = image.size
    return round(box[0] * w), round(box[1] * h), round(box[2] * w), round(box[3] * h)
