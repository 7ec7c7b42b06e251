"""Image intake on the real sample photos and on crafted bad files."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from arena.images.intake import IntakeError, IntakeLimits, normalise
from tests.conftest import SAMPLE_IMAGES


def encode(image: Image.Image, fmt: str, **params) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **params)
    return out.getvalue()


def gradient(size=(64, 48), mode="RGB") -> Image.Image:
    image = Image.new("RGB", size)
    image.putdata([(x * 4 % 256, y * 5 % 256, (x + y) % 256) for y in range(size[1]) for x in range(size[0])])
    return image.convert(mode)


def png_claiming(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims width x height pixels."""
    data = encode(gradient((1, 1)), "PNG")
    ihdr = bytearray(data[8 + 8 : 8 + 8 + 13])
    ihdr[0:8] = struct.pack(">II", width, height)
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + bytes(ihdr)) & 0xFFFFFFFF)
    return data[:16] + bytes(ihdr) + crc + data[16 + 13 + 4 :]


def refused(data: bytes, limits: IntakeLimits | None = None) -> IntakeError:
    with pytest.raises(IntakeError) as raised:
        normalise(data, limits or IntakeLimits())
    return raised.value


class TestRealPhotos:
    def test_the_sample_photos_are_there(self):
        # without them the parametrised test below would quietly collect nothing
        assert len(SAMPLE_IMAGES) >= 10, "no GeoBrowse sample photos: set GEOARENA_SHARED to the shared dir"

    @pytest.mark.parametrize("path", SAMPLE_IMAGES, ids=lambda p: p.name)
    def test_each_sample_photo_is_normalised(self, path):
        clean = normalise(path.read_bytes())
        with Image.open(io.BytesIO(clean.jpeg)) as image:
            assert image.format == "JPEG"
            assert image.size == (clean.width, clean.height)
            assert not image.getexif()
            assert "icc_profile" not in image.info
        with Image.open(path) as original:
            assert (clean.width, clean.height) == original.size  # all are under 2048 px

    def test_same_photo_same_hash(self):
        data = SAMPLE_IMAGES[0].read_bytes()
        assert normalise(data).sha256 == normalise(data).sha256

    def test_downscales_to_the_long_side(self):
        clean = normalise(SAMPLE_IMAGES[0].read_bytes(), IntakeLimits(long_side=512))
        assert max(clean.width, clean.height) == 512


class TestMetadata:
    def test_exif_orientation_applied_and_gps_dropped(self):
        exif = Image.Exif()
        exif[0x0112] = 6  # orientation: rotate 90° clockwise to display
        exif[0x8825] = {1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)}  # GPS IFD
        data = encode(gradient((80, 40)), "JPEG", exif=exif.tobytes())
        with Image.open(io.BytesIO(data)) as source:
            assert source.getexif().get_ifd(0x8825)  # the GPS tag really is there
        clean = normalise(data)
        assert (clean.width, clean.height) == (40, 80)
        with Image.open(io.BytesIO(clean.jpeg)) as image:
            assert not image.getexif()
            assert b"Exif" not in clean.jpeg

    def test_png_with_alpha_is_flattened(self):
        image = gradient(mode="RGBA")
        image.putalpha(0)
        clean = normalise(encode(image, "PNG"))
        with Image.open(io.BytesIO(clean.jpeg)) as out:
            assert out.mode == "RGB"
            assert out.getpixel((10, 10)) >= (250, 250, 250)  # transparent -> white

    def test_webp_and_16_bit_png_accepted(self):
        assert normalise(encode(gradient(), "WEBP")).width == 64
        sixteen = Image.new("I;16", (32, 32), 40000)
        with Image.open(io.BytesIO(normalise(encode(sixteen, "PNG")).jpeg)) as out:
            assert 150 < out.getpixel((5, 5))[0] < 160  # 40000/65535 of full scale, not clipped

    def test_heic_accepted_when_the_plugin_is_installed(self):
        pillow_heif = pytest.importorskip("pillow_heif")
        heif = pillow_heif.from_pillow(gradient())
        out = io.BytesIO()
        heif.save(out, format="HEIF")
        assert normalise(out.getvalue()).source_format == "HEIF"


class TestRefusals:
    def test_zero_bytes(self):
        error = refused(b"")
        assert (error.status, error.code) == (422, "empty_file")

    def test_not_an_image(self):
        error = refused(b"<html><body>hello</body></html>")
        assert error.status == 415 and "JPEG, PNG or WebP" in error.message

    def test_gif_is_not_accepted(self):
        error = refused(encode(gradient(mode="P"), "GIF"))
        assert error.status == 415 and error.message.startswith("GIF images are not accepted")

    def test_truncated_jpeg(self):
        data = SAMPLE_IMAGES[0].read_bytes()
        error = refused(data[: len(data) // 2])
        assert (error.status, error.code) == (422, "unreadable_image")
        assert "truncated" in error.message

    def test_too_many_bytes(self):
        error = refused(SAMPLE_IMAGES[0].read_bytes(), IntakeLimits(max_bytes=1000))
        assert error.status == 413 and "limit is 0.0 MB" in error.message

    def test_too_many_pixels_refused_before_decoding(self):
        error = refused(png_claiming(8000, 6000))  # 48 MP against the 40 MP default
        assert (error.status, error.code) == (413, "too_many_pixels")
        assert "8000x6000" in error.message

    def test_decompression_bomb(self):
        error = refused(png_claiming(100_000, 100_000))  # 10 gigapixels from a 70-byte file
        assert error.status == 413

    def test_animated_png_and_webp(self):
        frames = [gradient(), gradient().rotate(90)]
        for fmt in ("PNG", "WEBP"):
            error = refused(encode(frames[0], fmt, save_all=True, append_images=frames[1:]))
            assert (error.status, error.code) == (422, "animated_image"), fmt
