"""Pair sampling, the new-contender boost, target pairs and outage cool-downs."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from arena.config import ContenderConfig, PoolConfig
from arena.pool import PoolExhausted, PoolPolicy


def pool(contender_weights: dict[str, float], **sampling: object) -> PoolConfig:
    contenders = [
        ContenderConfig(name=n, provider="openai", model=n, base_url="http://x", weight=w)
        for n, w in contender_weights.items()
    ]
    return PoolConfig(contenders=contenders, sampling=dict(sampling))


def draws(policy: PoolPolicy, n: int, votes: dict[str, int] | None = None, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [policy.draw(rng, votes or {}) for _ in range(n)]


def appearances(pairs: list[tuple[str, str]]) -> Counter[str]:
    return Counter(name for pair in pairs for name in pair)


class TestDraw:
    def test_two_distinct_contenders_with_random_sides(self) -> None:
        pairs = draws(PoolPolicy.from_config(pool({"a": 1, "b": 1, "c": 1})), 3000)
        assert all(x != y for x, y in pairs)
        side_a = Counter(x for x, _ in pairs)
        assert all(900 < side_a[n] < 1100 for n in "abc")  # each is side A a third of the time

    def test_weights_follow_chatbot_arena_pair_probabilities(self) -> None:
        # First by weight, second by weight among the rest: P(pair {a,b}) etc. computed exactly.
        w = {"a": 4.0, "b": 2.0, "c": 1.0, "d": 1.0}
        total = sum(w.values())
        expected: dict[frozenset[str], float] = {}
        for x, wx in w.items():
            for y, wy in w.items():
                if x != y:
                    p = wx / total * wy / (total - wx)
                    key = frozenset((x, y))
                    expected[key] = expected.get(key, 0.0) + p
        n = 20000
        seen = Counter(frozenset(p) for p in draws(PoolPolicy.from_config(pool(w)), n))
        for key, p in expected.items():
            sd = (p * (1 - p) / n) ** 0.5
            assert abs(seen[key] / n - p) < 4 * sd, (sorted(key), seen[key] / n, p)

    def test_zero_weight_is_never_drawn(self) -> None:
        pairs = draws(PoolPolicy.from_config(pool({"a": 1, "b": 1, "off": 0})), 500)
        assert "off" not in appearances(pairs)

    def test_weights_section_overrides(self) -> None:
        policy = PoolPolicy.from_config(pool({"a": 1, "b": 1, "c": 1}, weights={"c": 0}))
        assert "c" not in appearances(draws(policy, 300))

    def test_new_contender_boost_until_enough_votes(self) -> None:
        policy = PoolPolicy.from_config(
            pool({"old1": 1, "old2": 1, "new": 1}, new_contender_boost=4.0, boost_until_votes=100)
        )
        boosted = appearances(draws(policy, 4000, {"old1": 500, "old2": 800, "new": 10}))
        assert boosted["new"] > 1.5 * boosted["old1"]
        grown_up = appearances(draws(policy, 4000, {"old1": 500, "old2": 800, "new": 100}))
        assert 0.85 < grown_up["new"] / grown_up["old1"] < 1.15
        assert policy.effective_weights({"new": 99}) == {"old1": 4.0, "old2": 4.0, "new": 4.0}

    def test_target_pair_takes_its_share(self) -> None:
        policy = PoolPolicy.from_config(
            pool({"a": 1, "b": 1, "c": 1, "d": 1}, targets=[{"pair": ["c", "d"], "share": 0.5}])
        )
        pairs = draws(policy, 4000)
        share = sum(frozenset(p) == {"c", "d"} for p in pairs) / len(pairs)
        # 0.5 from the target, plus 1/6 of the other half from ordinary sampling
        assert abs(share - (0.5 + 0.5 / 6)) < 0.03
        assert {p[0] for p in pairs if frozenset(p) == {"c", "d"}} == {"c", "d"}  # sides still random

    def test_fewer_than_two_available(self) -> None:
        with pytest.raises(PoolExhausted, match="fewer than two"):
            PoolPolicy.from_config(pool({"a": 1, "b": 0})).draw(random.Random(1), {})


class TestOutage:
    def test_repeated_failures_cool_a_contender_down_and_it_comes_back(self) -> None:
        clock = [1_000_000.0]
        policy = PoolPolicy(
            PoolPolicy.from_config(pool({"a": 1, "b": 1, "c": 1}, failure_threshold=3, cooldown_seconds=60)).config,
            clock=lambda: clock[0],
        )
        policy.record_result("c", False)
        policy.record_result("c", False)
        assert policy.status("c") == "active"  # two failures are not an outage yet
        policy.record_result("c", False)
        assert policy.status("c") == "cooling down until 1970-01-12 13:47:40 UTC"
        assert "c" not in appearances(draws(policy, 300))
        clock[0] += 61
        assert policy.status("c") == "active"
        assert "c" in appearances(draws(policy, 300))

    def test_a_success_resets_the_count(self) -> None:
        policy = PoolPolicy.from_config(pool({"a": 1, "b": 1}, failure_threshold=2))
        for ok in (False, True, False, True, False):
            policy.record_result("a", ok, now=100.0)
        assert policy.status("a", now=100.0) == "active"

    def test_everyone_cooling_down_is_explained(self) -> None:
        policy = PoolPolicy.from_config(pool({"a": 1, "b": 1}, failure_threshold=1, cooldown_seconds=60))
        policy.record_result("a", False, now=policy.clock())
        with pytest.raises(PoolExhausted, match="1 cooling down"):
            policy.draw(random.Random(0), {})

    def test_target_pair_pauses_while_one_side_cools(self) -> None:
        policy = PoolPolicy.from_config(
            pool({"a": 1, "b": 1, "c": 1}, failure_threshold=1, targets=[{"pair": ["a", "b"], "share": 1.0}])
        )
        assert set(map(frozenset, draws(policy, 50))) == {frozenset("ab")}
        policy.record_result("b", False)
        assert set(map(frozenset, draws(policy, 50))) == {frozenset("ac")}

    def test_unknown_contender_status(self) -> None:
        with pytest.raises(KeyError):
            PoolPolicy.from_config(pool({"a": 1, "b": 1})).status("zzz")


class TestConfig:
    @pytest.mark.parametrize(
        ("sampling", "message"),
        [
            ({"weights": {"ghost": 1}}, "not a contender"),
            ({"targets": [{"pair": ["a", "a"], "share": 0.1}]}, "two different"),
            ({"targets": [{"pair": ["a", "b"], "share": 0.7}, {"pair": ["a", "c"], "share": 0.7}]}, "more than 1"),
            ({"targets": [{"pair": ["a", "b"]}]}, "needs"),
            ({"failure_threshold": 0}, "failure_threshold"),
            ({"new_contender_boost": 0}, "new_contender_boost"),
            ({"cooldown": 5}, "unknown keys cooldown"),
        ],
    )
    def test_mistakes_are_explained(self, sampling: dict[str, object], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            PoolPolicy.from_config(pool({"a": 1, "b": 1, "c": 1}, **sampling))

    @pytest.mark.parametrize(
        ("weights", "sampling"),
        [
            ({"a": float("inf"), "b": 1, "c": 1}, {}),  # TOML's inf passes the contender's `weight >= 0`
            ({"a": 1, "b": 1, "c": 1}, {"weights": {"b": float("inf")}}),
            ({"a": 1, "b": 1, "c": 1}, {"weights": {"b": float("nan")}}),
            ({"a": 1, "b": 1, "c": 1}, {"new_contender_boost": float("inf"), "boost_until_votes": 10}),
            ({"a": 1, "b": 1, "c": 1}, {"new_contender_boost": float("nan"), "boost_until_votes": 10}),
        ],
    )
    def test_weights_must_be_finite(self, weights: dict[str, float], sampling: dict[str, object]) -> None:
        # an infinite weight made every draw raise ValueError ("Total of weights must be
        # finite"): a 500 for every new battle instead of an error at start-up
        with pytest.raises(ValueError, match="finite"):
            PoolPolicy.from_config(pool(weights, **sampling))
