"""EXIF GPS is read before intake strips it, handed to the caller, never kept in the image."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from arena.images.intake import normalise
from arena.images.location import GPS_IFD, exif_gps
from tests.conftest import SAMPLE_IMAGES
from tests.images.gps_photo import with_gps

ANSHUN = (26.2456, 105.9340)  # level1-2.jpg's gold answer: Anshun, Guizhou


def _photo() -> object:
    found = [p for p in SAMPLE_IMAGES if p.name == "level1-2.jpg"]
    if not found:
        pytest.fail("the GeoBrowse sample photos are missing: set GEOARENA_SHARED to the shared folder")
    return found[0]


class TestExifGps:
    def test_read_from_the_upload_and_absent_from_the_stored_jpeg(self) -> None:
        upload = with_gps(_photo(), *ANSHUN)  # type: ignore[arg-type]
        with Image.open(io.BytesIO(upload)) as original:
            assert exif_gps(original) == pytest.approx(ANSHUN, abs=1e-6)
        clean = normalise(upload)
        assert clean.gps == pytest.approx(ANSHUN, abs=1e-6)
        with Image.open(io.BytesIO(clean.jpeg)) as stored:
            assert not stored.getexif() and not stored.getexif().get_ifd(GPS_IFD)
            assert "exif" not in stored.info
        assert b"TestPhone" not in clean.jpeg and b"Exif" not in clean.jpeg

    def test_southern_and_western_hemispheres(self) -> None:
        clean = normalise(with_gps(_photo(), -22.9519, -43.2105))  # type: ignore[arg-type]
        assert clean.gps == pytest.approx((-22.9519, -43.2105), abs=1e-6)

    def test_no_gps_and_no_fix_are_none(self) -> None:
        assert normalise(_photo().read_bytes()).gps is None  # type: ignore[attr-defined]
        assert normalise(with_gps(_photo(), 0.0, 0.0)).gps is None  # type: ignore[arg-type]

    def test_damaged_gps_block_is_no_position_not_an_error(self) -> None:
        for gps in (
            {1: "N", 2: (999.0, 0.0, 0.0), 3: "E", 4: (10.0, 0.0, 0.0)},
            {1: "N", 2: (10.0, 0.0, 0.0)},
        ):
            with Image.open(_photo()) as image:  # type: ignore[call-overload]
                exif = image.getexif()
                exif[GPS_IFD] = gps
                out = io.BytesIO()
                image.save(out, "JPEG", exif=exif.tobytes())
            assert normalise(out.getvalue()).gps is None
