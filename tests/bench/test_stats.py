"""Wilson intervals, Cohen's kappa and agreement per class, on worked examples."""

from __future__ import annotations

import random

import pytest

from arena.bench.stats import agreement, cohen_kappa, wilson


class TestWilson:
    def test_worked_example(self):
        # 8 of 10: Wilson 95% interval 0.4902 .. 0.9433 (e.g. statsmodels proportion_confint method="wilson")
        p = wilson(8, 10)
        assert p.rate == 0.8
        assert p.low == pytest.approx(0.4902, abs=1e-4) and p.high == pytest.approx(0.9433, abs=1e-4)

    def test_edges_stay_inside_zero_and_one(self):
        assert wilson(0, 10).low == 0.0 and wilson(0, 10).high == pytest.approx(0.2775, abs=1e-4)
        assert wilson(10, 10).high == 1.0 and wilson(10, 10).low == pytest.approx(0.7225, abs=1e-4)
        assert (wilson(0, 0).low, wilson(0, 0).high, wilson(0, 0).rate) == (0.0, 1.0, None)

    def test_rejects_impossible_counts(self):
        with pytest.raises(ValueError):
            wilson(3, 2)

    def test_covers_the_truth_about_95_percent_of_the_time(self):
        rng = random.Random(7)
        hits = 0
        for _ in range(2000):
            k = sum(rng.random() < 0.3 for _ in range(40))
            p = wilson(k, 40)
            hits += p.low <= 0.3 <= p.high
        assert 0.93 <= hits / 2000 <= 0.975


class TestKappa:
    def test_worked_example(self):
        # the classic 2x2 example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po 0.7, pe 0.5, kappa 0.4
        a = ["y"] * 25 + ["n"] * 25
        b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
        assert cohen_kappa(a, b) == pytest.approx(0.4)

    def test_perfect_and_undefined(self):
        assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == pytest.approx(1.0)
        assert cohen_kappa(["a", "a"], ["a", "a"]) is None
        assert cohen_kappa([], []) is None


class TestAgreement:
    def test_per_class_of_the_reference(self):
        human = ["a", "a", "tie", "b", "b", "b"]
        judge = ["a", "b", "tie", "b", "b", "a"]
        result = agreement(human, judge, classes=("a", "tie", "b", "both_bad"))
        assert (result.overall.k, result.overall.n) == (4, 6)
        assert (result.by_class["a"].k, result.by_class["a"].n) == (1, 2)
        assert (result.by_class["b"].k, result.by_class["b"].n) == (2, 3)
        assert result.by_class["both_bad"].n == 0
        assert result.as_dict()["by_class"]["tie"]["rate"] == 1.0
