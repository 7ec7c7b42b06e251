"""Active pair sampling: the gain formula, exact pair probabilities, propensities stored and exported."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest

from arena.pool import PoolPolicy
from arena.pool.active import Evidence, covariance, pair_gains
from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.vote_log import VoteLog
from tests.pool.test_policy import pool


def evidence(strength: list[float], battles: list[list[float]], names: str = "abcd") -> Evidence:
    s = np.array(strength)
    return Evidence(tuple(names[: s.size]), s - s.mean(), np.array(battles, dtype=float))


class TestGain:
    def test_gain_is_the_fall_of_the_summed_variance(self):
        rng = np.random.default_rng(0)
        strength = rng.normal(0, 0.5, 5)
        counts = rng.integers(5, 50, (5, 5)).astype(float)
        battles = np.triu(counts, 1) + np.triu(counts, 1).T
        sigma = covariance(strength, battles)
        gains = pair_gains(strength, sigma)
        p = 1 / (1 + np.exp(-(strength[:, None] - strength[None, :])))
        info = np.linalg.pinv(sigma, hermitian=True)
        for i, j in [(0, 1), (2, 4), (1, 3)]:
            u = np.zeros(5)
            u[i], u[j] = 1, -1
            after = np.linalg.pinv(info + p[i, j] * (1 - p[i, j]) * np.outer(u, u), hermitian=True)
            assert gains[i, j] == pytest.approx(np.trace(sigma) - np.trace(after), rel=1e-8)

    def test_a_close_thinly_measured_pair_beats_a_lopsided_well_measured_one(self):
        ev = evidence(
            [0.0, 0.1, 3.0, 0.05], [[0, 5, 400, 400], [5, 0, 400, 400], [400, 400, 0, 400], [400, 400, 400, 0]]
        )
        gains = pair_gains(ev.strength, covariance(ev.strength, ev.battles))
        assert gains[0, 1] > 2 * gains[0, 2]


class TestActivePolicy:
    def active(self, weights: dict[str, float] | None = None, **sampling: object) -> PoolPolicy:
        return PoolPolicy.from_config(pool(weights or {"a": 1, "b": 1, "c": 1, "d": 1}, mode="active", **sampling))

    def test_probabilities_are_a_distribution_with_an_exploration_floor(self):
        policy = self.active(exploration=0.25)
        ev = evidence(
            [0.0, 0.1, 3.0, 0.05], [[0, 5, 400, 400], [5, 0, 400, 400], [400, 400, 0, 400], [400, 400, 400, 0]]
        )
        names, probs = policy.pair_probabilities({"a": 1, "b": 1, "c": 1, "d": 1}, ev)
        upper = probs[np.triu_indices(4, 1)]
        assert upper.sum() == pytest.approx(1.0)
        assert upper.min() >= 0.25 / 6 - 1e-12  # every pair keeps its share of the weighted rule
        assert probs[names.index("a"), names.index("b")] == upper.max()

    def test_draws_follow_the_stated_propensities(self):
        policy = self.active()
        ev = evidence([0.0, 0.4, 1.2, -0.3], [[0, 50, 10, 80], [50, 0, 30, 5], [10, 30, 0, 60], [80, 5, 60, 0]])
        rng = random.Random(3)
        n = 20_000
        drawn = [policy.draw_pair(rng, {}, ev) for _ in range(n)]
        seen = Counter(frozenset(d.pair) for d in drawn)
        stated = {frozenset(d.pair): d.propensity for d in drawn}
        assert len(stated) == 6
        for pair, p in stated.items():
            sd = (p * (1 - p) / n) ** 0.5
            assert abs(seen[pair] / n - p) < 4 * sd, (sorted(pair), seen[pair] / n, p)
        assert 0.47 < sum(d.a == "a" for d in drawn if "a" in d.pair) / sum("a" in d.pair for d in drawn) < 0.53

    def test_a_new_contender_is_sought_out_and_weights_and_outages_count(self):
        policy = self.active({"a": 1, "b": 1, "c": 1, "new": 1, "off": 0})
        known = Evidence(("a", "b", "c"), np.array([0.0, 0.2, -0.2]), np.full((3, 3), 300.0) - np.diag([300.0] * 3))
        names, probs = policy.pair_probabilities(policy.available({}), known)
        assert "off" not in names
        new = names.index("new")
        assert probs[new].sum() > 0.5  # the unknown contender is in most battles until it has votes
        for _ in range(policy.config.failure_threshold):
            policy.record_result("new", ok=False)
        assert "new" not in policy.available({})

    def test_targets_keep_their_share_in_active_mode(self):
        policy = self.active(targets=[{"pair": ["a", "b"], "share": 0.3}])
        names, probs = policy.pair_probabilities({"a": 1, "b": 1, "c": 1, "d": 1}, None)
        assert probs[names.index("a"), names.index("b")] >= 0.3
        assert probs[np.triu_indices(4, 1)].sum() == pytest.approx(1.0)

    def test_weighted_mode_reports_the_chatbot_arena_probability(self):
        policy = PoolPolicy.from_config(pool({"a": 4.0, "b": 2.0, "c": 1.0}))
        draw = next(d for d in (policy.draw_pair(random.Random(s), {}) for s in range(50)) if set(d.pair) == {"a", "b"})
        # 4/7 * 2/3 + 2/7 * 4/5
        assert draw.propensity == pytest.approx(4 / 7 * 2 / 3 + 2 / 7 * 4 / 5)

    @pytest.mark.parametrize(
        ("sampling", "message"),
        [
            ({"mode": "clever"}, "mode must be one of"),
            ({"mode": "active", "exploration": 0}, "exploration must be a share"),
            ({"mode": "active", "exploration": float("nan")}, "exploration must be a share"),
        ],
    )
    def test_bad_sampling_settings_are_refused_in_words(self, sampling, message):
        with pytest.raises(ValueError, match=message):
            PoolPolicy.from_config(pool({"a": 1, "b": 1}, **sampling))


class TestEvidenceFromSnapshot:
    def test_strengths_and_counts_come_from_the_snapshot(self):
        rng = np.random.default_rng(1)
        a = rng.integers(0, 3, 2000)
        b = (a + rng.integers(1, 3, 2000)) % 3
        y = (
            rng.random(2000) < 1 / (1 + np.exp(-(np.array([0.0, 0.5, 1.0])[a] - np.array([0.0, 0.5, 1.0])[b])))
        ).astype(float)
        snap = build_snapshot(VoteLog(["x", "y", "z"], a, b, y), RankOptions(ci="sandwich", style=False, anchor="x"))
        ev = Evidence.from_snapshot(json.loads(json.dumps(snap)))
        assert ev is not None and set(ev.contenders) == {"x", "y", "z"}
        rating = {r["contender"]: r["rating"] for r in snap["leaderboard"]}
        gap = (ev.strength[ev.contenders.index("z")] - ev.strength[ev.contenders.index("x")]) * 400 / np.log(10)
        assert gap == pytest.approx(rating["z"] - rating["x"])
        assert ev.battles.sum() == 2 * 2000
        assert Evidence.from_snapshot(None) is None


class TestStoredAndExported:
    async def test_a_battle_keeps_the_probability_of_its_pair_and_the_export_has_it(self, client, app, photo_bytes):
        from sqlalchemy import select

        from arena.db.tables import Battle
        from tests.battles.test_flow import run_battle

        battle_id, events = await run_battle(client, photo_bytes)
        assert events[-1][0] == "end"
        assert (await client.post(f"/api/battles/{battle_id}/vote", json={"choice": "a"})).status_code == 200
        with app.state.services.database.sessions() as session:
            stored = session.scalars(select(Battle.propensity).where(Battle.id == battle_id)).one()
        # the test pool has two contenders: one possible pair
        assert stored == pytest.approx(1.0)
        from arena.export.db import export_rows

        with app.state.services.database.sessions() as session:
            rows = list(export_rows(session))
        assert [r["propensity"] for r in rows] == [pytest.approx(1.0)]

    def test_the_sampler_reads_the_latest_stored_snapshot(self, database_url):
        from arena.db.session import make_engine, make_sessionmaker
        from arena.pool.counts import EvidenceCache, latest_evidence
        from arena.ratings.job import store_snapshot

        sessions = make_sessionmaker(make_engine(database_url))
        cache = EvidenceCache(sessions, ttl=0)
        assert cache.get() is None  # no snapshot yet: every contender counts as unknown
        a, b = np.array([0, 1, 2, 0] * 50), np.array([1, 2, 0, 2] * 50)
        y = np.array([1.0, 0.0, 1.0, 0.5] * 50)
        store_snapshot(
            sessions, build_snapshot(VoteLog(["x", "y", "z"], a, b, y), RankOptions(ci="sandwich", style=False))
        )
        with sessions() as session:
            ev = latest_evidence(session)
        assert ev is not None and set(ev.contenders) == {"x", "y", "z"} and ev.battles.sum() == 400
        assert cache.get() is not None
