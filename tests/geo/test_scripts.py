"""Script detection and the country priors it gives."""

from __future__ import annotations

import pytest

from arena.geo.scripts import detect_scripts, script_of


def top(text: str) -> str | None:
    priors = detect_scripts(text).priors
    return max(priors, key=lambda c: priors[c]) if priors else None


class TestScriptOf:
    @pytest.mark.parametrize(
        ("ch", "script"),
        [
            ("a", "Latin"),
            ("é", "Latin"),
            ("ộ", "Latin"),
            ("Ж", "Cyrillic"),
            ("λ", "Greek"),
            ("東", "Han"),
            ("の", "Hiragana"),
            ("カ", "Katakana"),
            ("ｶ", "Katakana"),
            ("한", "Hangul"),
            ("ก", "Thai"),
            ("ب", "Arabic"),
            ("ש", "Hebrew"),
            ("क", "Devanagari"),
            ("ა", "Georgian"),
        ],
    )
    def test_letters(self, ch: str, script: str) -> None:
        assert script_of(ch) == script

    @pytest.mark.parametrize("ch", ["1", " ", "-", "、", "€", "★"])
    def test_non_letters_have_no_script(self, ch: str) -> None:
        assert script_of(ch) is None


class TestDetectScripts:
    @pytest.mark.parametrize(
        ("text", "country"),
        [
            ("서울특별시 중구", "KR"),
            ("とうきょう駅", "JP"),
            ("東京タワー", "JP"),  # Han with kana is Japanese, not Chinese
            ("กรุงเทพมหานคร", "TH"),
            ("Москва, Тверская улица", "RU"),
            ("ירושלים", "IL"),
            ("नई दिल्ली", "IN"),
            ("Αθήνα", "GR"),
            ("თბილისი", "GE"),
            ("欢迎光临广东省中山市", "CN"),  # simplified forms
            ("臺灣鐵路管理局", "TW"),  # traditional forms
            ("São João da Boa Vista", "BR"),
            ("Straße", "DE"),
        ],
    )
    def test_script_points_to_country(self, text: str, country: str) -> None:
        assert top(text) == country

    def test_counts_letters_per_script(self) -> None:
        report = detect_scripts("Tokyo 東京 2024")
        assert report.counts == {"Latin": 5, "Han": 2}
        assert report.dominant == "Latin"

    def test_plain_latin_gives_no_prior(self) -> None:
        # ASCII is written everywhere: it must not pretend to know a country.
        assert detect_scripts("PARKING EXIT 24h").priors == {}

    def test_plain_latin_does_not_dilute_other_scripts(self) -> None:
        alone = detect_scripts("서울역").priors["KR"]
        mixed = detect_scripts("Seoul Station 서울역").priors["KR"]
        assert mixed == alone

    def test_latin_diacritics_are_named_as_hints(self) -> None:
        report = detect_scripts("Año Nuevo en la Calle Peñalver")
        assert any("Spanish" in h for h in report.hints)
        assert set(report.priors) >= {"ES", "MX"}

    def test_han_without_tells_spreads_over_han_countries(self) -> None:
        priors = detect_scripts("中山").priors
        assert priors["CN"] > priors["TW"] > 0
        assert {"HK", "JP", "SG"} <= set(priors)

    def test_a_lone_glyph_is_noise(self) -> None:
        # OCR often reads one stray character off texture; it must not set a prior.
        assert detect_scripts("C一").priors == {}
        assert detect_scripts("").counts == {}
