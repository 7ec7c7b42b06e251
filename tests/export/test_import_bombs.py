"""Vote files built to explode: every list and string an import takes is bounded, and a
Parquet file is measured before it is decoded. `arena import` and `arena rank --input` run
as commands on a fresh data directory and their peak memory is read; each runs under a
4 GB address-space limit, so that a bomb that does get decoded fails there instead of
filling a shared machine."""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.export.bombs import dictionary_bomb, list_bomb, string_bomb
from tests.test_cli import ARENA

ADDRESS_SPACE = 4 * 2**30  # virtual: glibc's and Arrow's thread arenas reserve far more than they use
PEAK_RSS_KB = 400_000  # an import of a one-row file peaks near 100 MB; the bombs, decoded, at 0.7-5 GB


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_kb: int


# Runs the command and reports the peak memory of that one child (RUSAGE_CHILDREN of a
# process with no other children), after the command's own output.
MEASURED = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
    "print(f'peak-kb={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr); sys.exit(code)"
)


def arena(home: Path, *args: str) -> Run:
    """`arena ARGS` in `home` (its own data directory), limited and measured."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env |= {"ARENA_DATA_DIR": str(home / "data"), "ARENA_CONFIG": str(home / "no-pool.toml")}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    done = subprocess.run(
        [sys.executable, "-c", MEASURED, ARENA, *args],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    stderr, _, peak = done.stderr.rpartition("peak-kb=")
    return Run(done.returncode, done.stdout, stderr, int(peak))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    assert arena(tmp_path, "db", "upgrade").returncode == 0
    return tmp_path


def refused(run: Run, *phrases: str) -> None:
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    assert "nothing was imported" in run.stderr and "Traceback" not in run.stderr, run.stderr[-2000:]
    for phrase in phrases:
        assert phrase in run.stderr, (phrase, run.stderr[-2000:])
    assert 0 < run.peak_kb < PEAK_RSS_KB, f"peak {run.peak_kb:,} kB"


def votes_in(home: Path) -> int:
    import sqlite3

    with sqlite3.connect(home / "data" / "arena.db") as db:
        return int(db.execute("SELECT count(*) FROM votes").fetchone()[0])


class TestParquetBombs:
    def test_the_issues_list_bomb_is_refused_before_decoding_and_ranking_still_runs(self, home: Path) -> None:
        bomb = list_bomb(home / "bomb.parquet")
        assert bomb.stat().st_size < 2000
        refused(
            arena(home, "import", str(bomb)),
            "row group 1 (row 1): categories holds 20,000,000 values",
            "an import takes at most 100 a row",
        )
        assert votes_in(home) == 0
        assert arena(home, "rank").returncode == 0  # the database is as it was: ranking runs
        ranked = arena(home, "rank", "--input", str(bomb), "--output", str(home / "snapshot.json"))
        refused(ranked, "categories holds 20,000,000 values")

    def test_a_string_bomb_is_refused_from_its_metadata(self, home: Path) -> None:
        bomb = string_bomb(home / "bomb.parquet")
        assert bomb.stat().st_size < 3_000_000  # 1.7 GB of prompt inside
        refused(
            arena(home, "import", str(bomb)),
            "row group 1 (row 1): prompt holds 1,700,000,0",
            "bytes before compression; an import takes at most 400,",
        )
        assert votes_in(home) == 0

    def test_a_dictionary_bomb_of_valid_rows_is_refused_by_its_expansion(self, home: Path) -> None:
        bomb = dictionary_bomb(home / "bomb.parquet")
        assert bomb.stat().st_size < 100_000  # 20,000 prompts of 100,000 characters: 2 GB decoded
        refused(arena(home, "import", str(bomb)), "times its size", "the file's text")
        assert votes_in(home) == 0


ROW = {"model_a": "x", "model_b": "y", "winner": "model_a", "tstamp": 1767225600.0}


def _bomb_rows() -> list[tuple[dict[str, object], str]]:
    step = {"tool": "crop", "arguments": "{}", "ok": True, "thought": "", "observation": "", "image_refs": []}
    return [
        (ROW | {"categories": [""] * 1_000_000}, "categories has 1,000,000 entries; an import takes at most 100"),
        (ROW | {"categories": ["x" * 10_000]}, "a categories entry is 10,000 characters long; the limit is 200"),
        (ROW | {"flags": ["f"] * 5_000}, "flags has 5,000 entries; an import takes at most 50"),
        (ROW | {"trajectory_a": [step] * 1_000}, "trajectory_a has 1,000 steps; an import takes at most 100"),
        (
            ROW | {"trajectory_b": [step | {"observation": "o" * 200_000}]},
            "trajectory_b: step 1: observation is 200,000 characters long; the limit is 100,000",
        ),
        (ROW | {"judge": "j" * 5_000}, "judge is 5,000 characters long; the limit is 200"),
    ]


class TestTextBombs:
    @pytest.mark.parametrize("fmt", ["jsonl", "csv"])
    def test_long_lists_and_strings_are_refused_by_line(self, home: Path, fmt: str) -> None:
        rows = _bomb_rows()
        path = home / f"bombs.{fmt}"
        if fmt == "jsonl":
            path.write_text("".join(json.dumps(row) + "\n" for row, _ in rows))
        else:
            columns = list(dict.fromkeys(k for row, _ in rows for k in row))
            out = io.StringIO()
            writer = csv.DictWriter(out, columns, lineterminator="\n")
            writer.writeheader()
            for row, _ in rows:
                writer.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()})
            path.write_text(out.getvalue())
        run = arena(home, "import", str(path))
        refused(run, *(f"line {number}: {reason}" for number, (_, reason) in enumerate(rows, 1 + (fmt == "csv"))))
        assert votes_in(home) == 0
