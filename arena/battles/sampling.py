"""Drawing two distinct contenders for a battle, by weight, sides at random."""

from __future__ import annotations

import random
from collections.abc import Mapping


class NotEnoughContenders(Exception):
    pass


def draw_pair(weights: Mapping[str, float], rng: random.Random) -> tuple[str, str]:
    """Two distinct names, each drawn with probability proportional to weight;
    the order is the side assignment (A, B) and is random."""
    names = [n for n, w in weights.items() if w > 0]
    if len(names) < 2:
        raise NotEnoughContenders("fewer than two contenders are available")
    first = rng.choices(names, weights=[weights[n] for n in names])[0]
    rest = [n for n in names if n != first]
    second = rng.choices(rest, weights=[weights[n] for n in rest])[0]
    return (first, second) if rng.random() < 0.5 else (second, first)
