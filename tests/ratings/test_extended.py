"""GATE uplift and position: the extended Bradley-Terry fit on simulated data with known effects."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from arena.ratings import bt, extended
from arena.ratings.bt import POINTS_PER_UNIT
from arena.ratings.leaderboard import RankOptions, build_snapshot
from arena.ratings.vote_log import VoteLog

NAMES = ["gpt-4o", "gpt-4o+gate", "claude", "claude+gate", "gemini", "lonely+gate"]
GATE = {n: n.endswith("+gate") for n in NAMES}
# natural units: base strengths, GATE uplift per base, and side A's advantage
BASE = {"gpt-4o": 0.2, "claude": 0.0, "gemini": -0.3, "lonely+gate": 0.4}
UPLIFT = {"gpt-4o": 0.35, "claude": -0.15}
LEFT = 0.12


def strengths() -> np.ndarray:
    out = []
    for name in NAMES:
        base = name.removesuffix("+gate")
        if name.endswith("+gate") and base in UPLIFT:
            out.append(BASE[base] + UPLIFT[base])
        else:
            out.append(BASE[name])
    return np.array(out)


def simulate(votes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(NAMES)
    a = rng.integers(0, n, votes)
    b = (a + rng.integers(1, n, votes)) % n
    theta = strengths()
    p = expit(theta[a] - theta[b] + LEFT)
    u = rng.random(votes)
    outcome = (u < p).astype(float)
    outcome[rng.random(votes) < 0.1] = 0.5
    return a, b, outcome


class TestDesign:
    def test_a_gate_variant_is_paired_only_when_its_base_played(self):
        design = extended.design_for(NAMES, GATE)
        assert design.paired == [("gpt-4o", "gpt-4o+gate"), ("claude", "claude+gate")]
        assert design.bases == ["gpt-4o", "claude", "gemini", "lonely+gate"]
        # a name ending in +gate that is not GATE-equipped is a contender of its own
        plain = extended.design_for(["x", "x+gate"], {"x+gate": False})
        assert plain.paired == [] and plain.bases == ["x", "x+gate"]


class TestRecovery:
    def test_known_uplifts_and_position_are_recovered(self):
        rng = np.random.default_rng(11)
        a, b, y = simulate(200_000, rng)
        out = extended.sections(bt.aggregate(a, b, y, len(NAMES)), NAMES, GATE)
        for base, truth in UPLIFT.items():
            entry = out["gate_uplift"][base]
            assert entry["contender"] == f"{base}+gate"
            # half wins shrink effects a little (10% ties): within 15% and inside the interval
            assert entry["points"] == pytest.approx(truth * POINTS_PER_UNIT * 0.9, rel=0.15)
            assert entry["ci_low"] < entry["points"] < entry["ci_high"]
        assert out["position"]["points"] == pytest.approx(LEFT * POINTS_PER_UNIT * 0.9, rel=0.15)
        assert "lonely" not in out["gate_uplift"]

    def test_intervals_cover_the_truth_about_95_percent_of_the_time(self):
        # without ties the model is exactly the simulated one, so the truth is known in points
        rng = np.random.default_rng(4)
        theta = strengths()
        hits = np.zeros(3)
        runs = 150
        for _ in range(runs):
            n = len(NAMES)
            a = rng.integers(0, n, 3000)
            b = (a + rng.integers(1, n, 3000)) % n
            y = (rng.random(a.size) < expit(theta[a] - theta[b] + LEFT)).astype(float)
            out = extended.sections(bt.aggregate(a, b, y, n), NAMES, GATE)
            truths = [
                (out["gate_uplift"]["gpt-4o"], UPLIFT["gpt-4o"]),
                (out["gate_uplift"]["claude"], UPLIFT["claude"]),
                (out["position"], LEFT),
            ]
            for i, (entry, truth) in enumerate(truths):
                hits[i] += entry["ci_low"] <= truth * POINTS_PER_UNIT <= entry["ci_high"]
        coverage = hits / runs
        assert np.all(coverage >= 0.89) and np.all(coverage <= 0.99), coverage

    def test_no_position_effect_gives_an_interval_around_zero(self):
        rng = np.random.default_rng(2)
        n = len(NAMES)
        a = rng.integers(0, n, 20_000)
        b = (a + rng.integers(1, n, a.size)) % n
        theta = strengths()
        y = (rng.random(a.size) < expit(theta[a] - theta[b])).astype(float)
        position = extended.sections(bt.aggregate(a, b, y, n), NAMES, GATE)["position"]
        assert position["ci_low"] < 0 < position["ci_high"]


class TestSnapshot:
    def test_the_snapshot_has_gate_uplift_and_position(self):
        rng = np.random.default_rng(6)
        a, b, y = simulate(5000, rng)
        log = VoteLog(NAMES, a, b, y, gate=GATE)
        snap = build_snapshot(log, RankOptions(ci="sandwich", style=False))
        assert set(snap["gate_uplift"]) == {"gpt-4o", "claude"}
        assert {"points", "ci_low", "ci_high", "contender", "head_to_head"} <= set(snap["gate_uplift"]["gpt-4o"])
        assert snap["position"]["side"] == "a" and snap["position"]["votes"] == 5000
        # the default leaderboard is untouched by the sibling fit
        rows = {r["contender"]: r["rating"] for r in snap["leaderboard"]}
        plain = build_snapshot(log, RankOptions(ci="sandwich", style=False))
        assert rows == {r["contender"]: r["rating"] for r in plain["leaderboard"]}
