"""Regional boards and the accuracy sections of a snapshot, on a simulated mix."""

from __future__ import annotations

import numpy as np

from arena.ratings.accuracy import LabelledVote
from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.regions import continent_boards, region_categories
from arena.ratings.vote_log import VoteLogBuilder


class TestRegionCategories:
    def test_a_labelled_battle_is_in_its_continent_and_country(self) -> None:
        assert region_categories(label_country="JP", label_continent="AS") == [
            "continent:Asia",
            "country:Japan",
        ]

    def test_unlabelled_agreement_is_its_own_category(self) -> None:
        assert region_categories(
            label_country=None, label_continent=None, answer_country_a="FR", answer_country_b="FR"
        ) == ["answers agree:France"]
        assert (
            region_categories(label_country=None, label_continent=None, answer_country_a="FR", answer_country_b="DE")
            == []
        )


def _mixed_log(seed: int = 0):  # type: ignore[no-untyped-def]
    """'euro-expert' wins 85% in Europe, 'asia-expert' 85% in Asia; 20 votes in Oceania."""
    rng = np.random.default_rng(seed)
    builder = VoteLogBuilder()
    for continent, country, n, p_euro in (
        ("EU", "FR", 400, 0.85),
        ("AS", "JP", 400, 0.15),
        ("OC", "AU", 20, 0.5),
    ):
        for _ in range(n):
            euro_wins = rng.random() < p_euro
            swap = rng.random() < 0.5
            a, b = ("asia-expert", "euro-expert") if swap else ("euro-expert", "asia-expert")
            outcome = float(euro_wins != swap)
            near, far = float(rng.uniform(1, 50)), float(rng.uniform(2000, 6000))
            euro_err = near if continent == "EU" else far
            asia_err = near if continent == "AS" else far
            ea, eb = (asia_err, euro_err) if swap else (euro_err, asia_err)
            builder.add(
                a,
                b,
                outcome,
                regions=region_categories(label_country=country, label_continent=continent),
                labelled=LabelledVote(a, b, outcome, ea, eb),
            )
    for _ in range(30):  # unlabelled, both answers say Italy
        builder.add(
            "euro-expert",
            "asia-expert",
            1.0,
            regions=region_categories(
                label_country=None, label_continent=None, answer_country_a="IT", answer_country_b="IT"
            ),
        )
    return builder.build()


class TestRegionalBoards:
    def test_each_continent_ranks_its_own_expert_first(self) -> None:
        snapshot = build_snapshot(_mixed_log(), RankOptions(rounds=20, min_category_votes=50))
        boards = {c["name"]: c for c in continent_boards(snapshot["categories"])}
        assert set(boards) == {"continent:Europe", "continent:Asia", "continent:Oceania"}
        europe, asia, oceania = (
            boards["continent:Europe"],
            boards["continent:Asia"],
            boards["continent:Oceania"],
        )
        assert europe["leaderboard"][0]["contender"] == "euro-expert"
        assert asia["leaderboard"][0]["contender"] == "asia-expert"
        for board in (europe, asia):
            top, second = board["leaderboard"]
            assert top["ci_low"] > second["ci_high"]  # separated: 400 votes at 85%
            assert not board["too_few_votes"]
        assert oceania["votes"] == 20 and oceania["too_few_votes"]
        agree = next(c for c in snapshot["categories"] if c["name"] == "answers agree:Italy")
        assert agree["votes"] == 30

    def test_snapshot_has_accuracy_beside_preference(self) -> None:
        snapshot = build_snapshot(_mixed_log(), RankOptions(rounds=20))
        acc = snapshot["accuracy"]
        assert set(acc) == {"euro-expert", "asia-expert"}
        for row in acc.values():
            assert row["labelled"] == 820
            assert 0.45 < row["within_km"]["200"]["value"] < 0.55  # near in its continent, far elsewhere
            assert set(row["within_km"]) == {"25", "200", "750", "2500"}
        pva = snapshot["preference_vs_accuracy"]
        assert pva["clear_votes"] == 800  # in Oceania both are far: no clearly closer answer
        assert 0.8 < pva["share_for_closer"]["value"] < 0.9

    def test_without_labels_the_sections_are_empty(self) -> None:
        builder = VoteLogBuilder()
        builder.add("x", "y", 1.0)
        builder.add("y", "x", 1.0)
        snapshot = build_snapshot(builder.build(), RankOptions(rounds=10))
        assert snapshot["accuracy"] == {} and snapshot["preference_vs_accuracy"] is None
