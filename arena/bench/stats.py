"""Pure statistics of the evaluations: Wilson intervals for accuracies and
agreement rates, Cohen's kappa for two raters, agreement per class.

Used by the benchmark, the model judge and the expert re-votes alike.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Proportion:
    """k successes out of n, with a Wilson score interval (k may be
    fractional: a tie is half a win)."""

    k: float
    n: int
    low: float
    high: float

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "k": self.k,
            "n": self.n,
            "rate": _round(self.rate),
            "ci_low": _round(self.low),
            "ci_high": _round(self.high),
        }


def wilson(k: float, n: int, z: float = Z95) -> Proportion:
    """The Wilson score interval (95% by default); [0, 1] when n is 0.

    Unlike the normal approximation it stays inside [0, 1] and is honest at
    0/n and n/n, which small benchmark samples hit all the time."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Proportion(0, 0, 0.0, 1.0)
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # exact at the edges (floating point leaves 1e-17 otherwise)
    return Proportion(k, n, 0.0 if k == 0 else max(0.0, centre - half), 1.0 if k == n else min(1.0, centre + half))


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters over the same items; None when undefined
    (no items, or chance agreement is already 1: both gave one label only)."""
    if len(first) != len(second):
        raise ValueError("both raters must rate the same items")
    n = len(first)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    count_a, count_b = Counter(first), Counter(second)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class Agreement:
    """How often a rater agrees with a reference, overall and per reference class."""

    overall: Proportion
    kappa: float | None
    by_class: dict[str, Proportion]

    def as_dict(self) -> dict[str, object]:
        return {
            "agreement": self.overall.as_dict(),
            "kappa": _round(self.kappa),
            "by_class": {label: p.as_dict() for label, p in self.by_class.items()},
        }


def agreement(reference: Sequence[str], rater: Sequence[str], classes: Sequence[str] = ()) -> Agreement:
    """Agreement of `rater` with `reference`, with Wilson intervals; per
    class of the reference (e.g. the human vote: left win, tie, right win)."""
    if len(reference) != len(rater):
        raise ValueError("both raters must rate the same items")
    pairs = list(zip(reference, rater, strict=True))
    labels = list(classes) or sorted(set(reference))
    by_class = {}
    for label in labels:
        rows = [(a, b) for a, b in pairs if a == label]
        by_class[label] = wilson(sum(a == b for a, b in rows), len(rows))
    overall = wilson(sum(a == b for a, b in pairs), len(pairs))
    return Agreement(overall=overall, kappa=cohen_kappa(reference, rater), by_class=by_class)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
