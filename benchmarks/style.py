"""How long counting an answer's style takes, by answer size and shape.

The battle runner counts each finished answer (arena.answers.style, on
markdown-it's parse); the counts must grow linearly with the answer, also for
inputs built to trip a parser ("**a **a ..." with no closing marker).

    python benchmarks/style.py
"""

from __future__ import annotations

import time

from arena.answers.style import style_features

SHAPES = {
    "prose": "The photo shows a tram stop; the sign reads Kyoto Station. ",
    "markdown": "## Clue\n- **Sign**: 京都駅 at 35.0116° N, 135.7681° E\n1. *kanji* and `code`\n\n",
    "unclosed bold": "**a ",
    "unclosed underscores": "__a ",
}


def seconds(text: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        style_features(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    print(f"{'shape':<22}{'chars':>10}{'seconds':>10}{'us/char':>10}")
    for name, unit in SHAPES.items():
        for chars in (10_000, 40_000, 160_000):
            text = unit * (chars // len(unit))
            took = seconds(text)
            print(f"{name:<22}{len(text):>10,}{took:>10.3f}{took / len(text) * 1e6:>10.2f}")


if __name__ == "__main__":
    main()
