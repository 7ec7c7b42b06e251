"""`arena export` and `arena import`: votes to and from clean_battle files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arena.config import Settings


def register(subparsers: Any) -> None:
    export = subparsers.add_parser(
        "export",
        help="write every vote to a file in Chatbot Arena's clean_battle format",
        description="Stream every vote (flagged ones too, with their flags) to FILE; "
        "the format follows the suffix: .jsonl, .csv or .parquet.",
    )
    export.add_argument("file", type=Path, help="output file (.jsonl, .csv or .parquet), or - for JSONL on stdout")
    export.add_argument("--since", help="only votes cast at or after this ISO 8601 time")
    export.add_argument("--answers", action="store_true", help="include both final answers (answer_a, answer_b)")
    export.add_argument(
        "--trajectories",
        action="store_true",
        help="include each side's tool steps (trajectory_a, trajectory_b): tool, arguments, thought, observation",
    )
    export.set_defaults(func=run_export)

    imp = subparsers.add_parser(
        "import",
        help="add votes from a clean_battle file (ours or FastChat's) to the database",
        description="Check every row first; if any is bad, list them with line numbers and import nothing. "
        "Battles already in the database are skipped.",
    )
    imp.add_argument("file", type=Path, help="input file (.jsonl, .json, .csv or .parquet)")
    imp.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    from arena.db.ready import open_engine
    from arena.db.session import make_sessionmaker
    from arena.export.db import export_rows
    from arena.export.since import parse_since
    from arena.export.writers import write_rows

    to_stdout = str(args.file) == "-"
    from arena.export.readers import SUFFIX_FORMATS

    fmt = "jsonl" if to_stdout else SUFFIX_FORMATS.get(args.file.suffix.lower())
    if fmt not in ("jsonl", "csv", "parquet"):
        raise ValueError(f"{args.file}: choose the format by the suffix: .jsonl, .csv or .parquet")
    since = parse_since(args.since)
    engine = open_engine(Settings().resolved_database_url)
    rows_written = 0
    try:
        with make_sessionmaker(engine)() as session:
            rows = export_rows(session, since=since, answers=args.answers, trajectories=args.trajectories)

            def counted() -> Iterator[dict[str, Any]]:
                nonlocal rows_written
                for row in _with_progress(rows, "export"):
                    rows_written += 1
                    yield row

            chunks = write_rows(counted(), fmt, answers=args.answers, trajectories=args.trajectories)
            if to_stdout:
                for chunk in chunks:
                    sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
            else:
                partial = args.file.with_name(args.file.name + ".partial")
                with partial.open("wb") as f:
                    for chunk in chunks:
                        f.write(chunk)
                partial.replace(args.file)  # no half-written export under the real name
    finally:
        engine.dispose()
    print(f"exported {rows_written} votes" + ("" if to_stdout else f" to {args.file}"), file=sys.stderr)
    return 0


IMPORT_BATCH = 500  # votes per transaction: about 0.1 s of writing on SQLite


def run_import(args: argparse.Namespace) -> int:
    from arena.db.ready import open_engine
    from arena.db.session import make_sessionmaker
    from arena.export.db import import_rows
    from arena.export.readers import check_file, valid_rows

    engine = open_engine(Settings().resolved_database_url)  # before reading: a missing schema is said first
    try:
        total = check_file(args.file)  # raises FormatError listing every bad row
        # Every row was checked above, so a bad file imports nothing; the rows then go in
        # batches that each commit, so a live arena's writes wait for one batch at a time.
        with make_sessionmaker(engine)() as session:
            rows = _with_progress(valid_rows(args.file), "import", total)
            result = import_rows(session, rows, batch=IMPORT_BATCH, after_batch=session.commit)
    finally:
        engine.dispose()
    print(f"imported {result.imported} votes; {result.already_present} already present", file=sys.stderr)
    return 0


def _with_progress(rows: Any, desc: str, total: int | None = None) -> Any:
    if not sys.stderr.isatty():
        return rows
    from tqdm import tqdm

    return tqdm(rows, desc=desc, unit="vote", total=total, file=sys.stderr, leave=False)
