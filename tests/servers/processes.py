"""The host's processes, read from /proc: the code sandbox's tests, the benchmarks' servers."""

from __future__ import annotations

import os
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


def children_of(pid: int, parents: dict[int, int] | None = None) -> list[int]:
    """The processes whose parent is `pid` (in `parents`, read now if not given)."""
    parents = parent_of_each() if parents is None else parents
    return [child for child, parent in parents.items() if parent == pid]


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every process below `root` (in `parents`, read now if not given)."""
    parents = parent_of_each() if parents is None else parents
    found, todo = [], [root]
    while todo:
        children = children_of(todo.pop(), parents)
        found += children
        todo += children
    return found


def with_children(pid: int) -> tuple[int, ...]:
    """`pid` and its live children: `arena serve --workers N` serves from N children."""
    return (pid, *children_of(pid))


def cpu_seconds(*pids: int) -> float:
    """User and system CPU seconds so far of these processes (all their threads), summed."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(*pids: int) -> float:
    """The peak resident memory (VmHWM) of these processes, summed."""
    total = 0.0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1]) / 1024
    return total
