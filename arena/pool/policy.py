"""Which two contenders meet in the next battle.

`PoolPolicy.from_config(pool_config)` reads each contender's `weight` and the
`[sampling]` table of `arena.toml`:

    [sampling]
    new_contender_boost = 3.0   # weight multiplier while a contender has few votes ...
    boost_until_votes = 300     # ... fewer than this many
    failure_threshold = 3       # consecutive failed answers before a cool-down
    cooldown_seconds = 300      # how long a failing contender sits out
    weights = { "gpt-4o" = 2.0 }   # optional: override a contender's `weight`

    mode = "weighted"           # or "active": pairs where a vote shrinks the uncertainty most
    exploration = 0.2           # active: this share of battles drawn by the weighted rule

    [[sampling.targets]]        # optional: a pair that should meet more often
    pair = ["gpt-4o", "gpt-4o+gate"]
    share = 0.2                 # of all battles, while both are available

`mode = "weighted"` (the default) draws a pair like Chatbot Arena does: the
first contender with probability proportional to its effective weight, the
second likewise among the rest. `mode = "active"` draws a pair with
probability proportional to the expected reduction of the leaderboard's
uncertainty (see `arena.pool.active`, computed from the latest snapshot) times
both contenders' weights, mixed with `exploration` of the weighted rule so every
pair keeps a floor. Either way targets take their share first, zero weights
and cool-downs leave a contender out, and sides are then assigned at random.
`draw_pair` also returns the exact probability of the drawn pair (its
propensity), stored with the battle so a fit can undo the sampling.

Outage state lives in a `Cooldowns` book (`arena.pool.cooldowns`): the app
keeps it in the database, so every replica counts the same failures and a
contender cooled down on one is cooled down on all; tools and tests may keep
it in memory.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from arena.config import PoolConfig
from arena.pool.active import Evidence, active_pair_probabilities
from arena.pool.cooldowns import Cooldowns, MemoryCooldowns, Outage

SAMPLING_MODES = ("weighted", "active")


class PoolExhausted(Exception):
    """Fewer than two contenders can battle right now (weights, cool-downs)."""


@dataclass(frozen=True)
class TargetPair:
    pair: tuple[str, str]
    share: float


@dataclass(frozen=True)
class SamplingConfig:
    weights: dict[str, float]
    new_contender_boost: float = 1.0
    boost_until_votes: int = 0
    targets: tuple[TargetPair, ...] = ()
    failure_threshold: int = 3
    cooldown_seconds: float = 300.0
    mode: str = "weighted"
    exploration: float = 0.2

    @classmethod
    def from_pool(cls, pool: PoolConfig) -> SamplingConfig:
        section: dict[str, Any] = pool.sampling.given()  # its keys were checked when the file was read
        names = [c.name for c in pool.contenders]
        weights = {c.name: float(c.weight) for c in pool.contenders}
        for name, weight in dict(section.get("weights", {})).items():
            if name not in weights:
                raise ValueError(f"[sampling.weights]: {name!r} is not a contender in the pool")
            if float(weight) < 0:
                raise ValueError(f"[sampling.weights]: {name!r} has a negative weight")
            weights[name] = float(weight)
        targets = tuple(_target(t, names) for t in section.get("targets", []))
        if sum(t.share for t in targets) > 1:
            raise ValueError("[sampling.targets]: the shares add up to more than 1")
        config = cls(
            weights=weights,
            new_contender_boost=float(section.get("new_contender_boost", 1.0)),
            boost_until_votes=int(section.get("boost_until_votes", 0)),
            targets=targets,
            failure_threshold=int(section.get("failure_threshold", 3)),
            cooldown_seconds=float(section.get("cooldown_seconds", 300.0)),
            mode=str(section.get("mode", "weighted")),
            exploration=float(section.get("exploration", 0.2)),
        )
        if config.mode not in SAMPLING_MODES:
            raise ValueError(
                f"[sampling]: mode must be one of {', '.join(map(repr, SAMPLING_MODES))}, not {config.mode!r}"
            )
        if not 0 < config.exploration <= 1:  # NaN fails this too
            raise ValueError("[sampling]: exploration must be a share in (0, 1], e.g. 0.2")
        not_finite = sorted(name for name, w in weights.items() if not math.isfinite(w))
        if not_finite:  # TOML has inf and nan; an infinite weight makes every draw fail
            raise ValueError(f"[sampling]: the weight of {', '.join(map(repr, not_finite))} must be a finite number")
        if not math.isfinite(config.new_contender_boost):
            raise ValueError("[sampling]: new_contender_boost must be a finite number")
        if config.new_contender_boost <= 0 or config.boost_until_votes < 0:
            raise ValueError("[sampling]: new_contender_boost must be > 0 and boost_until_votes >= 0")
        if config.failure_threshold < 1 or config.cooldown_seconds < 0:
            raise ValueError("[sampling]: failure_threshold must be >= 1 and cooldown_seconds >= 0")
        return config


@dataclass(frozen=True)
class Draw:
    """A drawn battle: side A, side B, and the probability of this pair (either order)."""

    a: str
    b: str
    propensity: float

    @property
    def pair(self) -> tuple[str, str]:
        return self.a, self.b


@dataclass
class PoolPolicy:
    config: SamplingConfig
    clock: Any = field(default=time.time, repr=False)  # epoch seconds; tests pass their own
    cooldowns: Cooldowns = field(default_factory=MemoryCooldowns, repr=False)

    @classmethod
    def from_config(cls, pool: PoolConfig, cooldowns: Cooldowns | None = None) -> PoolPolicy:
        return cls(SamplingConfig.from_pool(pool), cooldowns=cooldowns or MemoryCooldowns())

    def draw(self, rng: random.Random, vote_counts: Mapping[str, int]) -> tuple[str, str]:
        """Two distinct contenders (side A, side B) for a new battle."""
        return self.draw_pair(rng, vote_counts).pair

    def draw_pair(self, rng: random.Random, vote_counts: Mapping[str, int], evidence: Evidence | None = None) -> Draw:
        """Two distinct contenders for a new battle and the probability of their pair.

        `evidence` (from the latest snapshot) steers `mode = "active"`; without
        it every contender counts as unknown, which spreads the draws out."""
        available = self.available(vote_counts)
        if self.config.mode == "active":
            names, probabilities = self.pair_probabilities(available, evidence)
            upper = np.triu_indices(len(names), 1)
            flat = probabilities[upper]
            k = rng.choices(range(flat.size), weights=flat.tolist())[0]
            pair = (names[upper[0][k]], names[upper[1][k]])
            propensity = float(flat[k])
        else:
            pair = self._target_pair(rng, available) or self._weighted_pair(rng, available)
            names, probabilities = self.pair_probabilities(available, None)
            propensity = float(probabilities[names.index(pair[0]), names.index(pair[1])])
        a, b = pair if rng.random() < 0.5 else (pair[1], pair[0])
        return Draw(a, b, propensity)

    def available(self, vote_counts: Mapping[str, int]) -> dict[str, float]:
        """Contenders that can battle now with their effective weights; PoolExhausted below two."""
        cooling = self.cooldowns.cooling(self.clock())
        available = {
            name: w for name, w in self.effective_weights(vote_counts).items() if w > 0 and name not in cooling
        }
        if len(available) < 2:
            cooling_down = sum(1 for name in self.config.weights if name in cooling)
            raise PoolExhausted(
                "fewer than two contenders are available right now"
                + (f" ({cooling_down} cooling down after repeated failures)" if cooling_down else "")
            )
        return available

    def pair_probabilities(
        self, available: Mapping[str, float], evidence: Evidence | None
    ) -> tuple[list[str], np.ndarray]:
        """The exact probability of every unordered pair under this policy:
        (names, symmetric matrix whose upper triangle sums to 1)."""
        names = list(available)
        w = np.array([available[n] for n in names], dtype=np.float64)
        base = _weighted_pair_probabilities(w)
        if self.config.mode == "active":
            eps = self.config.exploration
            base = (1 - eps) * active_pair_probabilities(names, w.tolist(), evidence) + eps * base
        index = {n: i for i, n in enumerate(names)}
        live = [t for t in self.config.targets if all(n in index for n in t.pair)]
        out = base * (1 - sum(t.share for t in live))
        for t in live:
            i, j = index[t.pair[0]], index[t.pair[1]]
            out[i, j] += t.share
            out[j, i] += t.share
        return names, out

    def effective_weights(self, vote_counts: Mapping[str, int]) -> dict[str, float]:
        """Each contender's weight, boosted while it has fewer than `boost_until_votes` votes."""
        config = self.config
        return {
            name: weight * (config.new_contender_boost if vote_counts.get(name, 0) < config.boost_until_votes else 1.0)
            for name, weight in config.weights.items()
        }

    def record_result(self, name: str, ok: bool, now: float | None = None) -> None:
        """A side finished (`ok`) or its provider was down. Repeated failures start a cool-down.
        Blocking with the shared book (a database write): call it in a thread from async code."""
        outage = Outage(self.config.failure_threshold, self.config.cooldown_seconds)
        self.cooldowns.record(name, ok, self.clock() if now is None else now, outage)

    def status(self, name: str, now: float | None = None) -> str:
        """ "active" or "cooling down until <UTC time>"."""
        if name not in self.config.weights:
            raise KeyError(f"{name!r} is not a contender in the pool")
        until = self.cooldowns.cooling(self.clock() if now is None else now).get(name)
        if until is not None:
            return f"cooling down until {datetime.fromtimestamp(until, UTC):%Y-%m-%d %H:%M:%S} UTC"
        return "active"

    def _target_pair(self, rng: random.Random, available: Mapping[str, float]) -> tuple[str, str] | None:
        # Each target takes its share of battles while both of its contenders are available.
        roll = rng.random()
        for target in self.config.targets:
            if not all(name in available for name in target.pair):
                continue
            if roll < target.share:
                return target.pair
            roll -= target.share
        return None

    def _weighted_pair(self, rng: random.Random, available: Mapping[str, float]) -> tuple[str, str]:
        names = list(available)
        first = rng.choices(names, weights=[available[n] for n in names])[0]
        rest = [n for n in names if n != first]
        second = rng.choices(rest, weights=[available[n] for n in rest])[0]
        return first, second


def _weighted_pair_probabilities(w: np.ndarray) -> np.ndarray:
    """P({i, j}) when the first is drawn by weight and the second by weight
    among the rest: w_i/W * w_j/(W - w_i) + w_j/W * w_i/(W - w_j)."""
    total = w.sum()
    first = w / total
    second = w[None, :] / (total - w)[:, None]  # row: who went first
    ordered = first[:, None] * second
    np.fill_diagonal(ordered, 0.0)
    return np.asarray(ordered + ordered.T)


def _target(entry: Any, names: list[str]) -> TargetPair:
    if not isinstance(entry, dict) or "pair" not in entry or "share" not in entry:
        raise ValueError('[[sampling.targets]] needs `pair = ["a", "b"]` and `share = 0.1`')
    pair = tuple(str(n) for n in entry["pair"])
    if len(pair) != 2 or pair[0] == pair[1]:
        raise ValueError(f"[[sampling.targets]]: pair must name two different contenders, not {list(pair)}")
    for name in pair:
        if name not in names:
            raise ValueError(f"[[sampling.targets]]: {name!r} is not a contender in the pool")
    share = float(entry["share"])
    if not 0 < share <= 1:
        raise ValueError(f"[[sampling.targets]]: share must be in (0, 1], not {share}")
    return TargetPair(pair=(pair[0], pair[1]), share=share)
