"""Active pair sampling: where the next vote shrinks the leaderboard's uncertainty most.

The latest snapshot gives each contender's strength and the battle counts of
every pair; from them the Fisher information of the Bradley-Terry strengths is

    F = sum over pairs (i, j) of  battles_ij * p_ij (1 - p_ij) * u u^T,  u = e_i - e_j,

and Sigma = F^+ their covariance (strengths summing to zero). One more vote
between i and j adds w u u^T (w = p_ij (1 - p_ij)), and by Sherman-Morrison
the summed variance of all strengths falls by

    gain_ij = w * |Sigma u|^2 / (1 + w * u^T Sigma u),

the expected reduction of the leaderboard's uncertainty (A-optimal design).
A pair is drawn with probability proportional to its gain (times both
contenders' weights), so every pair keeps a chance and the probability of the
drawn pair is known exactly: it is stored with the battle (`propensity`) and a
fit can weight by its inverse.

This module is pure numpy and reads no database: the pool policy gives it the
strengths and counts it read from the latest snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

# Rating points per natural-log unit of strength (base 10, scale 400), as the rating job writes them.
POINTS_PER_UNIT = 400.0 / math.log(10.0)
# A contender the snapshot does not know yet: strength at the mean, a variance
# of 1 natural unit squared (about 175 rating points per standard deviation).
UNKNOWN_VARIANCE = 1.0

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Evidence:
    """What the latest snapshot says, as the sampler needs it."""

    contenders: tuple[str, ...]
    strength: FloatArray  # natural units
    battles: FloatArray  # (n, n) symmetric battle counts

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, Any] | None) -> Evidence | None:
        """From a snapshot dict (`leaderboard` ratings and `matrices.battles`); None without one."""
        if not snapshot or not snapshot.get("leaderboard") or not snapshot.get("matrices"):
            return None
        matrices = snapshot["matrices"]
        names = tuple(str(n) for n in matrices["contenders"])
        rating = {row["contender"]: float(row["rating"]) for row in snapshot["leaderboard"]}
        strength = np.array([rating.get(n, 0.0) for n in names]) / POINTS_PER_UNIT
        battles = np.asarray(matrices["battles"], dtype=np.float64)
        if battles.shape != (len(names), len(names)):
            return None
        return cls(names, strength - strength.mean(), battles)


def covariance(strength: FloatArray, battles: FloatArray) -> FloatArray:
    """Sigma = pseudo-inverse of the Fisher information of sum-zero strengths."""
    p = 1.0 / (1.0 + np.exp(-(strength[:, None] - strength[None, :])))
    weight = battles * p * (1 - p)
    info = -weight
    info[np.diag_indices_from(info)] = weight.sum(axis=1) - np.diag(weight)
    return np.asarray(np.linalg.pinv(info, hermitian=True), dtype=np.float64)


def pair_gains(strength: FloatArray, sigma: FloatArray) -> FloatArray:
    """(n, n) expected fall of the summed variance from one vote on each pair (0 on the diagonal)."""
    p = 1.0 / (1.0 + np.exp(-(strength[:, None] - strength[None, :])))
    w = p * (1 - p)
    s2 = sigma @ sigma
    d = np.diag(sigma)
    d2 = np.diag(s2)
    spread = d[:, None] + d[None, :] - 2 * sigma  # u^T Sigma u
    reach = d2[:, None] + d2[None, :] - 2 * s2  # |Sigma u|^2
    gain = w * np.clip(reach, 0, None) / (1 + w * np.clip(spread, 0, None))
    np.fill_diagonal(gain, 0.0)
    return gain


def active_pair_probabilities(
    names: Sequence[str],
    weights: Sequence[float],
    evidence: Evidence | None,
) -> FloatArray:
    """(n, n) symmetric matrix of unordered-pair probabilities (upper and lower
    triangles each hold the pair's probability; they sum to 1 over i < j).

    `names` are the contenders available now, `weights` their effective
    weights (boosts included). Contenders the evidence does not know get a
    wide prior, so a new contender is sampled eagerly until it has votes."""
    n = len(names)
    strength, sigma = _state_for(names, evidence)
    gain = pair_gains(strength, sigma)
    w = np.asarray(weights, dtype=np.float64)
    score = gain * w[:, None] * w[None, :]
    total = np.triu(score, 1).sum()
    if not np.isfinite(total) or total <= 0:
        score = np.outer(w, w)
        np.fill_diagonal(score, 0.0)
        total = np.triu(score, 1).sum()
    if total <= 0 or n < 2:
        return np.zeros((n, n))
    return np.asarray(score / total, dtype=np.float64)


def _state_for(names: Sequence[str], evidence: Evidence | None) -> tuple[FloatArray, FloatArray]:
    """Strengths and covariance over `names`: the snapshot's for known contenders
    (their marginal covariance), a wide independent prior for the others."""
    n = len(names)
    strength = np.zeros(n)
    sigma = np.eye(n) * UNKNOWN_VARIANCE
    if evidence is None:
        return strength, sigma
    index = {name: i for i, name in enumerate(evidence.contenders)}
    known = [i for i, name in enumerate(names) if name in index]
    if not known:
        return strength, sigma
    source = np.array([index[names[i]] for i in known])
    full = covariance(evidence.strength, evidence.battles)
    strength[known] = evidence.strength[source]
    sigma[np.ix_(known, known)] = full[np.ix_(source, source)]
    # a contender with no battles in the snapshot has no information: the prior again
    unplayed = [k for k, s in zip(known, source, strict=True) if evidence.battles[s].sum() == 0]
    for k in unplayed:
        sigma[k, :] = 0.0
        sigma[:, k] = 0.0
        sigma[k, k] = UNKNOWN_VARIANCE
    return strength, sigma
