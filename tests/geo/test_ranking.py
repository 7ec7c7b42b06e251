"""Ranking places from text lines: script priors + gazetteer evidence."""

from __future__ import annotations

import pytest

from arena.geo.gazetteer import Gazetteer, load_gazetteer
from arena.geo.ranking import TextLine, rank_places


@pytest.fixture(scope="module")
def gazetteer() -> Gazetteer:
    return load_gazetteer()


class TestRankPlaces:
    def test_city_name_in_han_text(self, gazetteer: Gazetteer) -> None:
        ranking = rank_places([TextLine("欢迎来到安顺市", 0.98)], gazetteer)
        top = ranking.candidates[0]
        assert top.country.country_code == "CN"
        assert top.place.name == "Anshun"
        assert top.point == pytest.approx((26.25, 105.93), abs=0.05)
        assert ranking.certainty == "high"

    def test_script_alone_ranks_but_stays_unsure(self, gazetteer: Gazetteer) -> None:
        ranking = rank_places([TextLine("こんにちは", 0.95)], gazetteer)
        assert ranking.candidates[0].country.country_code == "JP"
        assert ranking.candidates[0].place.kind == "country"
        assert ranking.evidence == []
        assert ranking.certainty in {"low", "medium"}

    def test_script_prior_picks_the_namesake(self, gazetteer: Gazetteer) -> None:
        # "Moscow" alone favours Russia by population; the Latin text has no prior.
        ranking = rank_places([TextLine("Moscow", 0.9)], gazetteer)
        assert ranking.candidates[0].country.country_code == "RU"

    def test_no_text_no_candidates(self, gazetteer: Gazetteer) -> None:
        ranking = rank_places([], gazetteer)
        assert ranking.candidates == [] and ranking.certainty == "none"

    def test_low_confidence_lines_are_not_matched(self, gazetteer: Gazetteer) -> None:
        ranking = rank_places([TextLine("Qingdao", 0.4)], gazetteer, min_confidence=0.6)
        assert ranking.evidence == [] and ranking.ignored_lines == [TextLine("Qingdao", 0.4)]

    def test_question_counts_as_a_weaker_hint(self, gazetteer: Gazetteer) -> None:
        question = "Which provincial capital city in China is this?"
        hinted = rank_places([], gazetteer, question=question)
        assert hinted.candidates[0].country.country_code == "CN"
        assert all(e.source == "question" for e in hinted.evidence)
        read = rank_places([TextLine("中国", 1.0)], gazetteer)
        assert hinted.candidates[0].score < read.candidates[0].score

    def test_shares_leave_room_for_elsewhere(self, gazetteer: Gazetteer) -> None:
        ranking = rank_places([TextLine("서울특별시", 0.99)], gazetteer)
        assert ranking.candidates[0].country.country_code == "KR"
        assert 0 < sum(c.share for c in ranking.candidates) < 1

    @pytest.mark.parametrize(
        ("line", "label", "country"),
        [
            ("臺北市政府", "Taipei, Taiwan", "TW"),  # traditional forms + a city
            ("香港", "Hong Kong", "HK"),  # a city-state, not a region of China
            ("São Paulo", "São Paulo, Brazil", "BR"),  # both state and city: the city wins
            ("吉林省长春市", "Changchun, Jilin, China", "CN"),  # region + city in it
        ],
    )
    def test_most_specific_place_the_text_supports(
        self, gazetteer: Gazetteer, line: str, label: str, country: str
    ) -> None:
        top = rank_places([TextLine(line, 0.95)], gazetteer).candidates[0]
        assert (top.place.label(), top.country.country_code) == (label, country)
        assert top.place.kind == "city" and not top.point_is_country_centre

    def test_reasons_strongest_first(self, gazetteer: Gazetteer) -> None:
        top = rank_places([TextLine("吉林省长春市", 0.95)], gazetteer).candidates[0]
        amounts = [float(r.rsplit("+", 1)[1]) for r in top.reasons if "+" in r]
        assert amounts == sorted(amounts, reverse=True)
