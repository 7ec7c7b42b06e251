"""Votes that count, as arrays: `VoteLog`, what `build_snapshot` (leaderboard.py) reads, and
`VoteLogBuilder`, which turns row-by-row input (database rows, export files) into one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from arena.ratings import anomaly
from arena.ratings.accuracy import LabelledVote
from arena.ratings.bt import FloatArray, IntArray

GATE_VS_PLAIN = "gate vs plain"
PLAIN_ONLY = "plain only"


@dataclass
class VoteLog:
    """Votes that count, as arrays. `outcome` is side a's score (1, 0, 0.5)."""

    contenders: list[str]
    a: IntArray
    b: IntArray
    outcome: FloatArray
    features_a: FloatArray | None = None  # (N, len(FEATURES)) in FEATURES order
    features_b: FloatArray | None = None
    tstamp: FloatArray | None = None
    gate: dict[str, bool] = field(default_factory=dict)  # contender -> GATE-equipped
    categories: dict[str, IntArray] = field(default_factory=dict)  # name -> vote indices
    labelled: list[LabelledVote] = field(default_factory=list)  # votes on battles with a location label
    voter: IntArray | None = None  # index into `voters` per vote, -1 = unknown
    voters: list[str] = field(default_factory=list)  # voter hashes
    # index into `addresses` per vote (the HMAC of the address that started the battle), -1 = unknown;
    # None when the input has no addresses (an export file)
    address: IntArray | None = None
    addresses: list[str] = field(default_factory=list)
    propensity: FloatArray | None = None  # probability the sampler gave each vote's pair; NaN unknown

    @property
    def size(self) -> int:
        return int(self.a.size)

    def without(self, drop: np.ndarray) -> VoteLog:
        """The same log minus the votes where `drop` (bool per vote) is set."""
        keep = ~drop
        new_index = np.cumsum(keep) - 1
        return replace(
            self,
            a=self.a[keep],
            b=self.b[keep],
            outcome=self.outcome[keep],
            features_a=None if self.features_a is None else self.features_a[keep],
            features_b=None if self.features_b is None else self.features_b[keep],
            tstamp=None if self.tstamp is None or self.tstamp.size != self.size else self.tstamp[keep],
            categories={k: new_index[v[keep[v]]] for k, v in self.categories.items()},
            voter=None if self.voter is None else self.voter[keep],
            address=None if self.address is None else self.address[keep],
            propensity=(
                None if self.propensity is None or self.propensity.size != self.size else self.propensity[keep]
            ),
        )


class VoteLogBuilder:
    """Collects votes one at a time (from the database or a file) into a VoteLog."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._a: list[int] = []
        self._b: list[int] = []
        self._outcome: list[float] = []
        self._fa: list[tuple[float, ...]] = []
        self._fb: list[tuple[float, ...]] = []
        self._tstamp: list[float] = []
        self._gate: dict[str, bool] = {}
        self._categories: dict[str, list[int]] = {}
        self._propensity: list[float] = []
        self._has_features = True
        self._labelled: list[LabelledVote] = []
        self._voter: list[int] = []
        self._voters: dict[str, int] = {}

    def add(
        self,
        model_a: str,
        model_b: str,
        outcome: float,
        *,
        features_a: Sequence[float] | None = None,
        features_b: Sequence[float] | None = None,
        tstamp: float = 0.0,
        gate_a: bool = False,
        gate_b: bool = False,
        language: str | None = None,
        categories: Sequence[str] = (),
        regions: Sequence[str] = (),
        labelled: LabelledVote | None = None,
        voter: str = "",
        propensity: float | None = None,
    ) -> None:
        row = len(self._a)
        self._voter.append(self._voters.setdefault(voter, len(self._voters)) if voter else anomaly.UNKNOWN_VOTER)
        self._a.append(self._contender(model_a))
        self._b.append(self._contender(model_b))
        self._outcome.append(outcome)
        if features_a is None or features_b is None:
            self._has_features = False
        else:
            self._fa.append(tuple(features_a))
            self._fb.append(tuple(features_b))
        self._tstamp.append(tstamp)
        self._propensity.append(math.nan if propensity is None else propensity)
        self._gate[model_a] = self._gate.get(model_a, False) or gate_a
        self._gate[model_b] = self._gate.get(model_b, False) or gate_b
        names = [f"language:{language}"] if language else []
        names.append(GATE_VS_PLAIN if gate_a != gate_b else (PLAIN_ONLY if not gate_a else "gate only"))
        names.extend(f"category:{c}" for c in categories)
        names.extend(regions)  # already named: "continent:Asia", "answers agree:Japan"
        if labelled is not None:
            self._labelled.append(labelled)
        for name in names:
            self._categories.setdefault(name, []).append(row)

    def build(self) -> VoteLog:
        with_features = self._has_features and bool(self._fa)
        return VoteLog(
            contenders=list(self._index),
            a=np.asarray(self._a, dtype=np.int64),
            b=np.asarray(self._b, dtype=np.int64),
            outcome=np.asarray(self._outcome, dtype=np.float64),
            features_a=np.asarray(self._fa, dtype=np.float64) if with_features else None,
            features_b=np.asarray(self._fb, dtype=np.float64) if with_features else None,
            tstamp=np.asarray(self._tstamp, dtype=np.float64),
            gate=dict(self._gate),
            categories={k: np.asarray(v, dtype=np.int64) for k, v in self._categories.items()},
            labelled=list(self._labelled),
            voter=np.asarray(self._voter, dtype=np.int64),
            voters=list(self._voters),
            propensity=np.asarray(self._propensity, dtype=np.float64),
        )

    def _contender(self, name: str) -> int:
        if name not in self._index:
            self._index[name] = len(self._index)
        return self._index[name]
