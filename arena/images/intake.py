"""Image intake: turn an untrusted upload into a clean, metadata-free JPEG.

The upload is identified by its content, not its name; its pixel count is
checked from the header before anything is decoded (decompression bombs);
EXIF orientation is applied and then every piece of metadata is dropped
(EXIF, XMP, ICC, JPEG comments, PNG text, bytes after the image), so no GPS
tag or polyglot leaves the server and no contender can read one.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from arena.errors import ClientError
from arena.images.encode import pixels_only_jpeg
from arena.images.location import exif_gps

try:  # HEIC/HEIF from phones, when the optional plugin is installed
    from pillow_heif import register_heif_opener

    register_heif_opener()
    HEIF_FORMATS = {"HEIF"}
except ImportError:  # pragma: no cover - depends on the environment
    HEIF_FORMATS = set()

ACCEPTED_FORMATS = {"JPEG", "PNG", "WEBP", "MPO"} | HEIF_FORMATS
ACCEPTED_LABEL = "JPEG, PNG or WebP" + (" (or HEIC)" if HEIF_FORMATS else "")
JPEG_QUALITY = 90


class IntakeError(ClientError):
    """An upload we refuse, with the HTTP status and a message for a person."""


@dataclass(frozen=True)
class IntakeLimits:
    max_bytes: int = 15 * 1024 * 1024
    max_pixels: int = 40_000_000
    long_side: int = 2048


@dataclass(frozen=True)
class NormalisedImage:
    jpeg: bytes
    width: int
    height: int
    sha256: str
    source_format: str
    # EXIF GPS of the upload: for the caller only (a label with consent), never in `jpeg`
    gps: tuple[float, float] | None = None


def normalise(data: bytes, limits: IntakeLimits = IntakeLimits()) -> NormalisedImage:
    """Validate an upload and return it re-encoded as a clean JPEG."""
    if not data:
        raise IntakeError(422, "empty_file", "The uploaded file is empty.")
    if len(data) > limits.max_bytes:
        raise IntakeError(
            413,
            "file_too_large",
            f"The photo is {_mb(len(data))}; the limit is {_mb(limits.max_bytes)}.",
        )
    image = _open(data)
    _check_dimensions(image, limits)
    if getattr(image, "n_frames", 1) > 1 and image.format != "MPO":
        # MPO is a phone's JPEG with a depth/preview frame: its first frame is the photo.
        raise IntakeError(
            422,
            "animated_image",
            "Animated or multi-frame images are not accepted; upload a single still photo.",
        )
    gps = exif_gps(image)
    image = _decode(image)
    jpeg = _encode(_to_rgb(ImageOps.exif_transpose(image)), limits.long_side)
    with Image.open(io.BytesIO(jpeg)) as clean:
        width, height = clean.size
    return NormalisedImage(
        jpeg=jpeg,
        width=width,
        height=height,
        sha256=hashlib.sha256(jpeg).hexdigest(),
        source_format=image.format or "",
        gps=gps,
    )


def _open(data: bytes) -> Image.Image:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise IntakeError(413, "too_many_pixels", "The image has far too many pixels.") from None
    except UnidentifiedImageError:
        raise IntakeError(
            415, "unsupported_type", f"This file is not a photo we can read; upload a {ACCEPTED_LABEL} image."
        ) from None
    except OSError as exc:
        raise IntakeError(422, "unreadable_image", f"The image could not be read ({exc}).") from None
    if image.format not in ACCEPTED_FORMATS:
        raise IntakeError(
            415,
            "unsupported_type",
            f"{image.format or 'This'} images are not accepted; upload a {ACCEPTED_LABEL} image.",
        )
    return image


def _check_dimensions(image: Image.Image, limits: IntakeLimits) -> None:
    width, height = image.size
    if width < 1 or height < 1:
        raise IntakeError(422, "unreadable_image", "The image has no pixels.")
    if width * height > limits.max_pixels:
        raise IntakeError(
            413,
            "too_many_pixels",
            f"The image is {width}x{height} ({width * height / 1e6:.0f} megapixels); "
            f"the limit is {limits.max_pixels / 1e6:.0f} megapixels.",
        )


def _decode(image: Image.Image) -> Image.Image:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image.load()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise IntakeError(413, "too_many_pixels", "The image has far too many pixels.") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise IntakeError(
            422,
            "unreadable_image",
            f"The image is damaged or truncated and could not be decoded ({exc}).",
        ) from None
    return image


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        # 16-bit greyscale: scale to 8 bits instead of clipping to white
        return image.point(lambda v: v / 256).convert("L").convert("RGB")
    return image.convert("RGB")


def _encode(image: Image.Image, long_side: int) -> bytes:
    if max(image.size) > long_side:
        image = image.copy()
        image.thumbnail((long_side, long_side), Image.Resampling.LANCZOS)
    return pixels_only_jpeg(image, JPEG_QUALITY, optimize=True)


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"
