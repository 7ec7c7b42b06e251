"""Where an answer commits to."""

from __future__ import annotations

import pytest

from arena.geo.commitment import Commitment, answer_commitment
from arena.geo.reverse import continent_of, locate


class TestAnswerCommitment:
    def test_stated_coordinates_come_first(self) -> None:
        found = answer_commitment("Probably Tokyo; my pin: (48.8584, 2.2945).")
        assert found is not None
        assert (found.level, found.country_code) == ("coordinates", "FR")
        assert (found.lat, found.lon) == pytest.approx((48.8584, 2.2945))

    def test_city_over_region_over_country(self) -> None:
        found = answer_commitment("The karst hills suggest Guizhou province; my best guess is Anshun, Guizhou, China.")
        assert found is not None
        assert (found.level, found.place, found.country_code) == ("city", "Anshun, Guizhou, China", "CN")
        region = answer_commitment("Somewhere in Guizhou, in southwest China.")
        assert region is not None and (region.level, region.country_code) == ("region", "CN")
        country = answer_commitment("The left-hand traffic and kanji say Japan.")
        assert country is not None and (country.level, country.country_code) == ("country", "JP")

    def test_a_city_in_a_named_country_beats_one_merely_mentioned(self) -> None:
        found = answer_commitment("Not Paris, despite the boulevards: the script is Thai, so Thailand, likely Bangkok.")
        assert found is not None and found.place == "Bangkok, Thailand"

    def test_shared_names_follow_the_named_country(self) -> None:
        found = answer_commitment("This is Moscow, Idaho, in the United States.")
        assert found is not None and found.country_code == "US"
        assert answer_commitment("This is Moscow.").country_code == "RU"  # type: ignore[union-attr]

    def test_names_in_other_scripts(self) -> None:
        assert answer_commitment("这是贵州省安顺市。").place == "Anshun, Guizhou, China"  # type: ignore[union-attr]

    def test_lowercase_words_are_not_towns_and_no_place_is_none(self) -> None:
        assert answer_commitment("The photo shows karst hills and a river; I cannot tell where.") is None

    def test_round_trips_through_json(self) -> None:
        found = answer_commitment("Anshun, China")
        assert found is not None and Commitment.from_json(found.as_json()) == found
        assert Commitment.from_json(None) is None and Commitment.from_json({"level": "planet"}) is None


class TestLocate:
    @pytest.mark.parametrize(
        ("point", "country", "continent"),
        [
            ((35.68, 139.76), "JP", "Asia"),
            ((48.85, 2.35), "FR", "Europe"),
            ((-33.86, 151.2), "AU", "Oceania"),
            ((40.7, -74.0), "US", "North America"),
            ((-23.5, -46.6), "BR", "South America"),
            ((30.04, 31.23), "EG", "Africa"),
            ((43.88, 125.32), "CN", "Asia"),
        ],
    )
    def test_country_and_continent_of_a_point(self, point: tuple[float, float], country: str, continent: str) -> None:
        found = locate(*point)
        assert (found.country_code, found.continent) == (country, continent)

    def test_continent_of_unknown_country_is_empty(self) -> None:
        assert continent_of("ZZ") == "" and continent_of("jp") == "AS"


class TestStatedVerdict:
    def test_the_baseline_s_country_verdict_wins_over_the_alternatives_it_lists(self) -> None:
        text = (
            "**Best guess: somewhere in China.** That is a guess at the country only.\n\n"
            "### Why\n- The text is in Chinese characters, written mostly in China, Singapore, Malaysia.\n\n"
            "### Also possible\n- Singapore\n- Malaysia\n"
        )
        commitment = answer_commitment(text)
        assert commitment is not None
        assert (commitment.level, commitment.country_code) == ("country", "CN")

    def test_in_the_question_s_language_too(self) -> None:
        commitment = answer_commitment("**最佳猜测：中国境内某处。** 这只是对国家的猜测。\n\n### 其他可能\n- 新加坡\n")
        assert commitment is not None and commitment.country_code == "CN"
