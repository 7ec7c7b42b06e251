"""Which two contenders meet in the next battle.

`PoolPolicy.from_config(pool_config)` reads each contender's `weight` and the
`[sampling]` table of `arena.toml`:

    [sampling]
    new_contender_boost = 3.0   # weight multiplier while a contender has few votes ...
    boost_until_votes = 300     # ... fewer than this many
    failure_threshold = 3       # consecutive failed answers before a cool-down
    cooldown_seconds = 300      # how long a failing contender sits out
    weights = { "gpt-4o" = 2.0 }   # optional: override a contender's `weight`

    [[sampling.targets]]        # optional: a pair that should meet more often
    pair = ["gpt-4o", "gpt-4o+gate"]
    share = 0.2                 # of all battles, while both are available

A pair is drawn like Chatbot Arena does: the first contender with
probability proportional to its effective weight, the second likewise among
the rest; sides are then assigned at random.

Outage state lives in this process's memory. With N app replicas each one
counts failures and cools a contender down on its own, so a dead endpoint is
taken out of rotation by each replica after `failure_threshold` failures
there; nothing needs to be shared, and a restart forgets the state (the
contender simply gets another chance).
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from arena.config import PoolConfig


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

    @classmethod
    def from_pool(cls, pool: PoolConfig) -> SamplingConfig:
        section: dict[str, Any] = dict(pool.sampling)
        unknown = set(section) - {"weights", "new_contender_boost", "boost_until_votes", "targets",
                                  "failure_threshold", "cooldown_seconds"}
        if unknown:
            raise ValueError(f"[sampling]: unknown keys {', '.join(sorted(unknown))}")
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
        )
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


@dataclass
class _Health:
    failures: int = 0  # consecutive
    cooling_until: float = 0.0  # epoch seconds


@dataclass
class PoolPolicy:
    config: SamplingConfig
    clock: Any = field(default=time.time, repr=False)  # epoch seconds; tests pass their own
    _health: dict[str, _Health] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_config(cls, pool: PoolConfig) -> PoolPolicy:
        return cls(SamplingConfig.from_pool(pool))

    def draw(self, rng: random.Random, vote_counts: Mapping[str, int]) -> tuple[str, str]:
        """Two distinct contenders (side A, side B) for a new battle."""
        now = self.clock()
        available = {name: w for name, w in self.effective_weights(vote_counts).items()
                     if w > 0 and not self._cooling(name, now)}
        if len(available) < 2:
            cooling = sum(1 for name in self.config.weights if self._cooling(name, now))
            raise PoolExhausted(
                "fewer than two contenders are available right now"
                + (f" ({cooling} cooling down after repeated failures)" if cooling else "")
            )
        pair = self._target_pair(rng, available) or self._weighted_pair(rng, available)
        return pair if rng.random() < 0.5 else (pair[1], pair[0])

    def effective_weights(self, vote_counts: Mapping[str, int]) -> dict[str, float]:
        """Each contender's weight, boosted while it has fewer than `boost_until_votes` votes."""
        config = self.config
        return {
            name: weight * (config.new_contender_boost if vote_counts.get(name, 0) < config.boost_until_votes else 1.0)
            for name, weight in config.weights.items()
        }

    def record_result(self, name: str, ok: bool, now: float | None = None) -> None:
        """A side finished (`ok`) or failed. Repeated failures start a cool-down."""
        now = self.clock() if now is None else now
        with self._lock:
            health = self._health.setdefault(name, _Health())
            if ok:
                health.failures = 0
                return
            health.failures += 1
            if health.failures >= self.config.failure_threshold:
                health.cooling_until = now + self.config.cooldown_seconds
                health.failures = 0  # after the cool-down it gets a full set of chances

    def status(self, name: str, now: float | None = None) -> str:
        """"active" or "cooling down until <UTC time>"."""
        if name not in self.config.weights:
            raise KeyError(f"{name!r} is not a contender in the pool")
        now = self.clock() if now is None else now
        if self._cooling(name, now):
            until = datetime.fromtimestamp(self._health[name].cooling_until, UTC)
            return f"cooling down until {until:%Y-%m-%d %H:%M:%S} UTC"
        return "active"

    def _cooling(self, name: str, now: float) -> bool:
        health = self._health.get(name)
        return health is not None and now < health.cooling_until

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
