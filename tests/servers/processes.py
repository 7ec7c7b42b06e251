"""The host's process tree, read from /proc: the code sandbox's tests, the benchmarks' servers."""

from __future__ import annotations

from pathlib import Path


def parent_of_each() -> dict[int, int]:
    """pid -> parent pid of every process now running."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every process below `root` (in `parents`, read now if not given)."""
    parents = parent_of_each() if parents is None else parents
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        found += children
        todo += children
    return found
