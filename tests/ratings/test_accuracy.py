"""Accuracy metrics and the preference-vs-accuracy share on simulated battles with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.ratings.accuracy import (
    EVERY_ANSWER,
    GEOSCORE_SCALE_KM,
    LabelledVote,
    Release,
    accuracy_section,
    geoscore,
    preference_vs_accuracy,
    waiting,
)


def _votes(errors_a: list[float | None], errors_b: list[float | None], outcomes: list[float]) -> list[LabelledVote]:
    return [LabelledVote("near", "far", o, ea, eb) for ea, eb, o in zip(errors_a, errors_b, outcomes, strict=True)]


class TestGeoScore:
    def test_worked_values(self) -> None:
        assert geoscore(0.0) == 5000.0
        assert geoscore(GEOSCORE_SCALE_KM) == pytest.approx(5000 / math.e)  # 1839.4
        assert geoscore(2500.0) == pytest.approx(5000 * math.exp(-2500 / 1492.7))  # 936.5
        assert geoscore(None) == 0.0 and geoscore(math.inf) == 0.0


class TestAccuracySection:
    def test_known_errors_give_known_metrics(self) -> None:
        # "near" is always 10 km off; "far" names no place 2 times in 10, else 5,000 km off.
        errors_b: list[float | None] = [None, None] + [5000.0] * 8
        section = accuracy_section(_votes([10.0] * 10, errors_b, [1.0] * 10), rounds=200, release=EVERY_ANSWER)
        near, far = section["near"], section["far"]
        assert near["labelled"] == far["labelled"] == 10
        assert near["median_km"] == {"value": 10.0, "ci_low": 10.0, "ci_high": 10.0}
        assert set(near["within_km"]) == {"25", "200", "750", "2500"}  # no 1 km radius: labels are cells
        assert [near["within_km"][k]["value"] for k in ("25", "200", "750", "2500")] == [1, 1, 1, 1]
        assert near["geoscore"]["value"] == pytest.approx(5000 * math.exp(-10 / 1492.7), abs=0.5)
        assert near["no_commitment_rate"]["value"] == 0
        assert far["committed"] == 8 and far["no_commitment_rate"]["value"] == pytest.approx(0.2)
        assert far["median_km"]["value"] == 5000.0
        assert far["within_km"]["2500"]["value"] == 0
        assert far["geoscore"]["value"] == pytest.approx(0.8 * 5000 * math.exp(-5000 / 1492.7), abs=0.5)
        assert near["country_accuracy"] is None  # no answer countries known

    def test_a_median_that_is_a_miss_is_null(self) -> None:
        section = accuracy_section(
            _votes([None] * 6 + [1.0] * 4, [1.0] * 10, [0.5] * 10), rounds=50, release=EVERY_ANSWER
        )
        assert section["near"]["median_km"]["value"] is None
        assert section["near"]["no_commitment_rate"]["value"] == pytest.approx(0.6)

    def test_country_accuracy_counts_no_place_as_wrong(self) -> None:
        votes = [
            LabelledVote("x", "y", 1.0, 5.0, None, True, None),
            LabelledVote("x", "y", 1.0, 50.0, 9.0, False, True),
        ]
        section = accuracy_section(votes, rounds=50, release=EVERY_ANSWER)
        assert section["x"]["country_accuracy"]["value"] == 0.5
        assert section["y"]["country_accuracy"]["value"] == 0.5  # the miss is wrong, not unknown

    def test_intervals_cover_the_true_median_about_95_percent_of_the_time(self) -> None:
        # Errors ~ exponential with scale 300 km: true median 300 ln 2 = 207.9 km.
        rng = np.random.default_rng(1)
        truth = 300 * math.log(2)
        covered = 0
        trials = 60
        for seed in range(trials):
            errors = rng.exponential(300.0, 150).tolist()
            section = accuracy_section(
                _votes(errors, [1.0] * 150, [1.0] * 150), rounds=200, seed=seed, release=EVERY_ANSWER
            )
            median = section["near"]["median_km"]
            assert median["ci_low"] <= median["value"] <= median["ci_high"]
            covered += median["ci_low"] <= truth <= median["ci_high"]
        assert covered / trials > 0.85

    def test_within_shares_match_the_simulated_distribution(self) -> None:
        rng = np.random.default_rng(2)
        errors = rng.exponential(300.0, 4000).tolist()
        within = accuracy_section(_votes(errors, [1.0] * 4000, [1.0] * 4000), rounds=100, release=EVERY_ANSWER)["near"][
            "within_km"
        ]
        for km in (25, 200, 750):
            expected = 1 - math.exp(-km / 300)
            assert within[str(km)]["ci_low"] - 0.01 <= expected <= within[str(km)]["ci_high"] + 0.01

    def test_a_radius_counts_only_labels_that_precise(self) -> None:
        votes = [
            LabelledVote("x", "y", 1.0, 0.0, 5.0, precision_km=750.0),  # a typed country: no 25 km claim
            LabelledVote("x", "y", 1.0, 10.0, 5.0, precision_km=1.0),
        ]
        within = accuracy_section(votes, rounds=20, release=EVERY_ANSWER)["x"]["within_km"]
        assert within["25"] == {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0, "of": 1}
        assert within["750"]["value"] == 1.0 and "of" not in within["750"]

    def test_reproducible_with_a_seed(self) -> None:
        votes = _votes([10.0, 300.0, None, 4000.0], [1.0, 2.0, 3.0, 4.0], [1, 0, 0.5, 1])
        assert accuracy_section(votes, seed=3, release=EVERY_ANSWER) == accuracy_section(
            votes, seed=3, release=EVERY_ANSWER
        )


class TestRelease:
    """What a snapshot publishes: nothing below 30 labelled answers, then figures that move
    only when ten more have come in (the maths above is the same on the answers taken)."""

    def test_milestones(self) -> None:
        release = Release()
        assert [release.count(n) for n in (0, 1, 29, 30, 31, 39, 40, 41, 95)] == [0, 0, 0, 30, 30, 30, 40, 40, 90]

    def test_a_contender_below_the_minimum_is_only_named_as_waiting(self) -> None:
        votes = _votes([10.0] * 29, [500.0] * 29, [1.0] * 29)
        assert accuracy_section(votes) == {}
        assert waiting(votes) == ["far", "near"]
        assert preference_vs_accuracy(votes) is None

    def test_between_milestones_nothing_published_changes(self) -> None:
        rng = np.random.default_rng(3)
        errors_a = rng.exponential(300.0, 60).tolist()
        errors_b = rng.exponential(30.0, 60).tolist()
        outcomes = rng.integers(0, 2, 60).astype(float).tolist()
        published = [
            (
                accuracy_section(_votes(errors_a[:n], errors_b[:n], outcomes[:n])),
                preference_vs_accuracy(_votes(errors_a[:n], errors_b[:n], outcomes[:n])),
            )
            for n in range(30, 61)
        ]
        changes = [
            n for n, before, after in zip(range(31, 61), published[:-1], published[1:], strict=True) if before != after
        ]
        assert changes == [40, 50, 60]  # each change takes in ten labelled answers at once
        section, pva = published[-1]
        assert section == accuracy_section(_votes(errors_a, errors_b, outcomes), release=EVERY_ANSWER)
        assert section["near"]["labelled"] == 60 and pva is not None and pva["labelled_votes"] == 60
        assert published[9][0]["near"]["labelled"] == 30  # 39 available, the first 30 used

    def test_a_pair_is_shown_from_its_own_milestones(self) -> None:
        votes = [LabelledVote("x", "y", 1.0, 10.0, 900.0)] * 35 + [LabelledVote("x", "z", 1.0, 10.0, 900.0)] * 12
        pva = preference_vs_accuracy(votes)
        assert pva is not None and pva["labelled_votes"] == 40
        assert [(p["pair"], p["labelled_votes"]) for p in pva["by_pair"]] == [(["x", "y"], 30)]


class TestPreferenceVsAccuracy:
    def test_voters_who_reward_the_closer_answer_80_percent_of_the_time(self) -> None:
        rng = np.random.default_rng(5)
        votes = []
        for _ in range(2000):
            near_km, far_km = rng.uniform(1, 100), rng.uniform(1000, 5000)
            a_is_near = rng.random() < 0.5
            closer_won = rng.random() < 0.8
            outcome = float(closer_won == a_is_near)
            ea, eb = (near_km, far_km) if a_is_near else (far_km, near_km)
            votes.append(LabelledVote("a-model", "b-model", outcome, ea, eb))
        result = preference_vs_accuracy(votes, rounds=200, release=EVERY_ANSWER)
        share = result["share_for_closer"]
        assert result["clear_votes"] == 2000
        assert share["ci_low"] <= 0.8 <= share["ci_high"]
        assert share["ci_high"] - share["ci_low"] < 0.06
        (pair,) = result["by_pair"]
        assert pair["pair"] == ["a-model", "b-model"] and pair["clear_votes"] == 2000

    def test_only_clearly_closer_battles_count(self) -> None:
        votes = [
            LabelledVote("x", "y", 1.0, 10.0, 30.0),  # 3x closer but only 20 km nearer: not clear
            LabelledVote("x", "y", 1.0, 100.0, 150.0),  # 50 km nearer but only 1.5x: not clear
            LabelledVote("x", "y", 0.0, 10.0, 40.0),  # clear: x closer, y won
            LabelledVote("x", "y", 0.5, 500.0, 100.0),  # clear: y closer, tie
            LabelledVote("x", "y", 1.0, None, 100.0),  # one names no place: left out
        ]
        result = preference_vs_accuracy(votes, rounds=50, release=EVERY_ANSWER)
        assert result["labelled_votes"] == 5 and result["clear_votes"] == 2
        assert (result["closer_won"], result["farther_won"], result["ties"]) == (0, 1, 1)
        assert result["share_for_closer"]["value"] == 0.25

    def test_no_clear_battle_has_no_share(self) -> None:
        result = preference_vs_accuracy([LabelledVote("x", "y", 1.0, 10.0, 11.0)], release=EVERY_ANSWER)
        assert result["clear_votes"] == 0 and result["share_for_closer"] is None


class TestRankFromAFile:
    def test_arena_rank_input_reads_the_accuracy_fields(self, tmp_path) -> None:  # type: ignore[no-untyped-def]
        from arena.export.writers import write_rows
        from arena.ratings.job import log_from_file
        from arena.ratings.leaderboard import RankOptions, build_snapshot

        rows = []
        for i in range(60):
            labelled = i % 3 != 2
            rows.append(
                {
                    "question_id": f"{i:032x}",
                    "model_a": "x",
                    "model_b": "y",
                    "winner": "model_a" if i % 4 else "model_b",
                    "tstamp": 1767225600.0 + i,
                    "error_km_a": 10.0 if labelled else None,
                    "error_km_b": (900.0 if i % 2 else None) if labelled else None,
                    "country": "JP" if labelled else None,
                    "continent": "Asia" if labelled else None,
                    "answer_country_a": "JP",
                    "answer_country_b": "JP" if i % 2 else None,
                }
            )
        path = tmp_path / "votes.jsonl"
        path.write_bytes(b"".join(write_rows(iter(rows), "jsonl")))
        log, _ = log_from_file(path)
        snapshot = build_snapshot(log, RankOptions(rounds=20, style=False))
        assert snapshot["accuracy"]["x"]["labelled"] == 40
        assert snapshot["accuracy"]["x"]["median_km"]["value"] == 10.0
        assert snapshot["accuracy"]["x"]["country_accuracy"]["value"] == 1.0
        assert snapshot["accuracy"]["y"]["no_commitment_rate"]["value"] == 0.5
        assert snapshot["preference_vs_accuracy"]["clear_votes"] == 20
        names = {c["name"]: c["votes"] for c in snapshot["categories"]}
        assert names["continent:Asia"] == 40 and names["country:Japan"] == 40
        assert names["answers agree:Japan"] == 10  # unlabelled rows whose answers both say Japan
