"""How long rendering an answer's markdown to sanitised HTML takes, by size and shape.

The battle runner renders each finished answer in a worker thread (arena.answers.markdown:
markdown-it, then nh3). Answers are capped at ARENA_MAX_ANSWER_CHARS (200,000); the time
must grow linearly with the answer, also for inputs built to trip a parser (unclosed
brackets and links, a flood of emphasis markers, a huge table, raw HTML to escape).
tests/answers/test_markdown_properties.py checks the output; this prints the time.

    python benchmarks/markdown.py
"""

from __future__ import annotations

import time

from arena.answers.markdown import render_markdown

SHAPES = {
    "prose": "The photo shows a tram stop; the sign reads Kyoto Station. ",
    "markdown": "## Clue\n- **Sign**: [map](https://example.org) at 35.01 N\n1. *kanji* and `code`\n\n",
    "open brackets": "[",
    "open links": "[a](",
    "emphasis flood": "*_",
    "table rows": "| x | y |\n",
    "raw html": "<img src=x onerror=alert(1)>",
}


def seconds(text: str, repeat: int = 2) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        render_markdown(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    print(f"{'shape':<16}{'chars':>10}{'seconds':>10}{'us/char':>10}")
    for name, unit in SHAPES.items():
        for chars in (25_000, 50_000, 100_000, 200_000):
            text = unit * (chars // len(unit))
            if name == "table rows":
                text = "| a | b |\n|---|---|\n" + text
            took = seconds(text)
            print(f"{name:<16}{len(text):>10,}{took:>10.3f}{took / len(text) * 1e6:>10.2f}")


if __name__ == "__main__":
    main()
