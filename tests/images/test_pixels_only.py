"""What leaves intake is pixels only: the attacker's files, then hypothesis over metadata."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, PngImagePlugin
from sqlalchemy import select

from arena.contenders.gate.registry import jpeg_bytes
from arena.db.tables import Battle
from arena.images.encode import jpeg_segments
from arena.images.intake import IntakeError, normalise
from tests.battles.test_flow import run_battle
from tests.conftest import SAMPLE_IMAGES

GPS_TEXT = b"GPSLatitude 48.858370 N GPSLongitude 2.294481 E"
POLYGLOT = b"<html><body><script>alert(document.cookie)</script></body></html>"
# what a clean file may hold: SOI, JFIF header, tables, baseline/progressive frame, scan, EOI
ALLOWED_MARKERS = {0xD8, 0xE0, 0xDB, 0xC4, 0xC0, 0xC2, 0xDD, 0xDA, 0xD9}


def assert_pixels_only(jpeg: bytes, *secrets: bytes) -> None:
    segments = jpeg_segments(jpeg)
    markers = {marker for marker, _ in segments}
    assert markers <= ALLOWED_MARKERS, f"unexpected segments {sorted(hex(m) for m in markers - ALLOWED_MARKERS)}"
    for marker, payload in segments:
        if marker == 0xE0:  # JFIF: version and density only, no thumbnail
            assert payload[:5] == b"JFIF\0" and len(payload) == 14
    for secret in secrets:
        assert secret not in jpeg


def photo() -> Image.Image:
    with Image.open(SAMPLE_IMAGES[0]) as image:
        return image.convert("RGB").resize((320, 240))


def jpeg_with_comment(comment: bytes) -> bytes:
    out = io.BytesIO()
    photo().save(out, "JPEG", comment=comment)
    return out.getvalue()


def insert_segment(jpeg: bytes, marker: int, payload: bytes) -> bytes:
    """A raw segment right after SOI, as a hand-crafted file would carry it."""
    return jpeg[:2] + bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


class TestAttackerFiles:
    def test_jpeg_comment_with_gps_text(self):
        data = jpeg_with_comment(GPS_TEXT)
        assert GPS_TEXT in data and Image.open(io.BytesIO(data)).info["comment"] == GPS_TEXT
        assert_pixels_only(normalise(data).jpeg, GPS_TEXT, b"GPS")

    def test_jpeg_comment_html_polyglot(self):
        data = jpeg_with_comment(POLYGLOT)
        assert_pixels_only(normalise(data).jpeg, POLYGLOT, b"<script")

    def test_raw_app_segments_and_trailing_html(self):
        data = jpeg_with_comment(b"x")
        for marker in (0xE1, 0xE2, 0xED, 0xEE, 0xEF):  # EXIF/XMP, ICC, Photoshop IRB, Adobe, APP15
            data = insert_segment(data, marker, b"Exif\0\0" + GPS_TEXT if marker == 0xE1 else POLYGLOT)
        data += POLYGLOT  # after EOI: browsers sniffing HTML would find it
        assert_pixels_only(normalise(data).jpeg, GPS_TEXT, POLYGLOT, b"Exif", b"Photoshop")

    def test_png_text_chunks_and_appended_html(self):
        info = PngImagePlugin.PngInfo()
        info.add_text("Comment", GPS_TEXT.decode())
        info.add_itxt("XML:com.adobe.xmp", POLYGLOT.decode(), zip=False)
        out = io.BytesIO()
        photo().save(out, "PNG", pnginfo=info)
        data = out.getvalue()
        iend = data.rindex(b"IEND") - 4
        data = data[:iend] + png_chunk(b"prVt", POLYGLOT) + data[iend:] + POLYGLOT
        assert_pixels_only(normalise(data).jpeg, GPS_TEXT, POLYGLOT, b"<html")

    def test_webp_with_exif_and_xmp(self):
        exif = Image.Exif()
        exif[0x010E] = GPS_TEXT.decode()  # ImageDescription
        out = io.BytesIO()
        photo().save(out, "WEBP", exif=exif.tobytes(), xmp=POLYGLOT)
        assert_pixels_only(normalise(out.getvalue()).jpeg, GPS_TEXT, POLYGLOT)

    def test_gate_encoder_drops_a_fetched_images_comment(self):
        # GATE's registry stores and sends images decoded from elsewhere (web image search)
        with Image.open(io.BytesIO(jpeg_with_comment(POLYGLOT))) as fetched:
            fetched.load()
            assert fetched.info["comment"] == POLYGLOT
            assert_pixels_only(jpeg_bytes(fetched), POLYGLOT)
            assert_pixels_only(jpeg_bytes(fetched.crop((0, 0, 100, 100))), POLYGLOT)

    @pytest.mark.parametrize("path", SAMPLE_IMAGES[:5], ids=lambda p: p.name)
    def test_real_photos_come_out_pixels_only(self, path):
        assert_pixels_only(normalise(path.read_bytes()).jpeg)


# -- hypothesis: whatever metadata a file carries, none of it comes out -------------------------------

secret_text = st.binary(min_size=8, max_size=200).map(lambda b: b"SECRET" + b.replace(b"\0", b"_"))


@st.composite
def decorated_upload(draw: st.DrawFn) -> tuple[bytes, bytes]:
    secret = draw(secret_text)
    width, height = draw(st.integers(1, 96)), draw(st.integers(1, 96))
    mode = draw(st.sampled_from(["RGB", "L", "RGBA", "P", "CMYK"]))
    fmt = draw(st.sampled_from(["JPEG", "PNG", "WEBP"]))
    if fmt == "JPEG" and mode in ("RGBA", "P"):
        mode = "RGB"
    if fmt in ("WEBP", "PNG") and mode == "CMYK" or fmt == "WEBP" and mode == "P":
        mode = "RGB"
    seed = draw(st.integers(0, 255))
    image = Image.new("RGB", (width, height), (seed, 255 - seed, seed // 2)).convert(mode)
    out = io.BytesIO()
    if fmt == "JPEG":
        image.save(out, "JPEG", comment=secret, icc_profile=draw(st.sampled_from([b"", secret])) or None)
        data = out.getvalue()
        for marker in draw(st.lists(st.sampled_from([0xE1, 0xE2, 0xEC, 0xED, 0xEE, 0xEF, 0xFE]), max_size=4)):
            data = insert_segment(data, marker, secret)
    elif fmt == "PNG":
        info = PngImagePlugin.PngInfo()
        info.add_text(draw(st.sampled_from(["Comment", "GPS", "Description"])), secret.decode("latin-1"))
        image.save(out, "PNG", pnginfo=info)
        data = out.getvalue()
    else:
        image.save(out, "WEBP", xmp=secret)
        data = out.getvalue()
    if draw(st.booleans()):
        data += secret
    return data, secret


class TestHypothesis:
    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(decorated_upload())
    def test_no_metadata_survives(self, upload):
        data, secret = upload
        clean = normalise(data)
        assert_pixels_only(clean.jpeg, secret, b"SECRET")
        with Image.open(io.BytesIO(clean.jpeg)) as image:
            assert image.format == "JPEG" and image.mode == "RGB"
            assert not image.info.get("comment") and not image.getexif()

    @settings(max_examples=200, deadline=None)
    @given(st.binary(max_size=2048))
    def test_any_bytes_are_a_clean_jpeg_or_a_clear_refusal(self, data):
        try:
            clean = normalise(data)
        except IntakeError as error:
            assert 400 <= error.status < 500 and error.message
            return
        assert_pixels_only(clean.jpeg)

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def test_a_corrupted_real_photo_is_clean_or_refused(self, data):
        original = bytearray(SAMPLE_IMAGES[1].read_bytes())
        for _ in range(data.draw(st.integers(1, 8))):
            original[data.draw(st.integers(0, len(original) - 1))] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(len(original) // 2, len(original)))
        try:
            clean = normalise(bytes(original[:cut]))
        except IntakeError as error:
            assert 400 <= error.status < 500
            return
        assert_pixels_only(clean.jpeg)


# -- end to end: the public file and both contenders' requests -----------------------------------------


class TestThroughTheArena:
    async def test_comment_reaches_neither_images_nor_contenders(self, app, client, openai_server):
        _, server = openai_server
        before = len(server.requests)
        data = insert_segment(jpeg_with_comment(GPS_TEXT + POLYGLOT), 0xE1, b"Exif\0\0" + GPS_TEXT)
        battle_id, events = await run_battle(client, data)
        assert ("ready", {}) in events
        battle = (await client.get(f"/api/battles/{battle_id}/events")).text
        assert "GPS" not in battle
        requests = server.requests[before:]
        assert len(requests) == 2
        for body in requests:
            url = body["messages"][-1]["content"][1]["image_url"]["url"]
            assert_pixels_only(base64.b64decode(url.split(",", 1)[1]), GPS_TEXT, POLYGLOT)
        with app.state.services.database.sessions() as session:
            sha = session.scalars(select(Battle.image_sha256)).one()
        public = await client.get(f"/images/{sha}")
        assert public.status_code == 200
        assert_pixels_only(public.content, GPS_TEXT, POLYGLOT, b"<script")
