"""Time and peak memory of a full leaderboard snapshot.

A snapshot is everything `arena rank` computes: the voter anomaly test,
Bradley-Terry with a 100-round bootstrap, the robustness figure, the style-adjusted fit with a 100-round bootstrap,
online Elo, the win-rate matrices and per-category leaderboards.

    .venv/bin/python benchmarks/ratings.py                # 100k, 1M, 3M simulated + real
    .venv/bin/python benchmarks/ratings.py --sizes 100000 --no-real
    .venv/bin/python benchmarks/ratings.py --command --sizes 1000000 --formats parquet jsonl
    .venv/bin/python benchmarks/ratings.py --command --sizes 1000000 --databases sqlite postgres

`--command` times what a user waits for instead: each set of votes is written
once as an export file (Parquet, JSONL or CSV), then three fresh processes
read it: `read s` only reads the columns ranking needs (the floor),
`library s` is `build_snapshot` on the votes already in memory, and
`command s` is the whole `arena rank --input FILE --output OUT` (process
start, imports, reading, every fit, writing the JSON), with its peak
resident memory. Simulated files carry style metadata (conv_metadata); the
real Chatbot Arena file is plain (no conv_metadata).

`--databases sqlite postgres` also loads the same votes into a fresh
database of each kind (voted battles with both answers, style counts stored
as the battle runner stores them) and times `arena rank --output OUT`
reading it twice: `first` with no copy of the votes (every vote read),
`copy` through ranking's copy of the votes the first run left
(`export.vote_copy`), after `--new-votes` more were cast. `read s` is then
`export.vote_table.read_vote_table` (the database's full read), `command s`
the whole command, which also runs the voter screening write-back and the
anonymity audit the database path does, and `cpu x file` compares it with
the same votes' Parquet file with style: a database's answers always carry
style counts, so for the real votes a file with their simulated style is
ranked too. The answers are
stored empty unless `--answer-chars N` gives each one N characters of
markdown and a commitment (a served answer is 1-3 thousand characters):
ranking reads neither, but the rows it reads are then as wide as real ones.

Each measurement runs in a fresh child process, so its peak resident
memory (ru_maxrss, which includes the vote arrays themselves) is its own.
`snapshot s` is wall time, `cpu s` the process's CPU time (a fairer figure
on a shared machine); the load average is printed first.
Simulated votes: 100 contenders with normal strengths, six style features
per answer drawn around realistic counts, a known style effect, 10% ties.
The real line expands `../shared/data/chatbot-arena-20240814/pair_counts.json`
(1.67M Chatbot Arena votes among 129 models) into one row per vote; it has
no style metadata, so the style features there are simulated.
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/http.py must not stand in for the standard library's `http`
# (starlette imports it through arena.db): this folder is no import path here.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import json
import os
import resource
import shutil
import subprocess
import time
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

REAL_DATA = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "chatbot-arena-20240814" / "pair_counts.json"
)
REAL_DATA_FALLBACK = Path("/work/shared/data/chatbot-arena-20240814/pair_counts.json")
STYLE_EFFECT = np.array([0.5, 0.1, -0.15, -0.1, 0.06, 0.05])  # FEATURES order
FEATURE_MEANS = np.array([350.0, 4.0, 2.0, 3.0, 0.5, 1.0])  # FEATURES order; tools: GATE sides only, on average


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000, 3_000_000])
    parser.add_argument("--contenders", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--no-real", action="store_true", help="skip the real Chatbot Arena votes")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--command", action="store_true", help="time the whole `arena rank --input` command")
    parser.add_argument("--formats", nargs="*", default=["parquet"], choices=["parquet", "jsonl", "csv"])
    parser.add_argument(
        "--databases",
        nargs="*",
        default=[],
        choices=["sqlite", "postgres"],
        help="with --command: also load the votes into each database and time `arena rank` from it",
    )
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    parser.add_argument(
        "--answer-chars", type=int, default=0, help="with --databases: characters of each stored answer's text"
    )
    parser.add_argument(
        "--new-votes",
        type=int,
        default=1000,
        help="with --databases: votes added between the first `arena rank` and the second (through the copy)",
    )
    parser.add_argument("--child-read-db", help=argparse.SUPPRESS)
    parser.add_argument("--child-read", help=argparse.SUPPRESS)
    parser.add_argument("--child-library", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_read:
        print(json.dumps(_time_read(Path(args.child_read))))
        return
    if args.child_read_db:
        print(json.dumps(_time_read_database(args.child_read_db)))
        return
    if args.child_library:
        print(json.dumps(_time_library(Path(args.child_library), args.rounds)))
        return
    if args.command:
        _command_table(args)
        return
    if args.child:
        print(json.dumps(_measure(args.child, args.contenders, args.rounds)))
        return
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"{'votes':>10} {'contenders':>10} {'snapshot s':>10} {'cpu s':>6} {'BT+boot s':>9} {'style s':>8} {'peak MB':>8}  notes"
    )
    jobs = [str(n) for n in args.sizes] + ([] if args.no_real else ["real"])
    for job in jobs:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                job,
                "--contenders",
                str(args.contenders),
                "--rounds",
                str(args.rounds),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{r['votes']:>10,} {r['contenders']:>10} {r['snapshot_s']:>10.2f} {r['cpu_s']:>6.2f} {r['bt_s']:>9.2f} "
            f"{r['style_s']:>8.2f} {r['peak_mb']:>8.0f}  {r['notes']}"
        )


def _measure(job: str, contenders: int, rounds: int) -> dict[str, Any]:
    from arena.ratings import bt
    from arena.ratings.leaderboard import RankOptions, build_snapshot

    if job == "real":
        log, notes = _real_votes()
    else:
        log, notes = _simulated_votes(int(job), contenders)
    options = RankOptions(rounds=rounds, ci="bootstrap", seed=0, style=True)
    # BT alone (aggregate + exact fit + bootstrap), for comparison with FastChat
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):  # as build_snapshot does
        matchups = bt.aggregate(log.a, log.b, log.outcome, len(log.contenders))
        full = bt.fit_bt(matchups)
        bt.bootstrap_bt(matchups, full, rounds, np.random.default_rng(0))
    bt_s = time.perf_counter() - start
    exactness = _exactness(matchups, full)

    start, cpu = time.perf_counter(), time.process_time()
    snapshot = build_snapshot(log, options)
    snapshot_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    style_s = snapshot["timings"].get("style", float("nan"))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    coefficients = {c["feature"]: c["coefficient"] for c in snapshot["style"]["coefficients"]}
    notes += (
        f"; |BT - logistic regression| max {exactness:.1e} pts; gradient norm {full.gradient_norm:.1e}; "
        f"style bootstrap: {snapshot['style']['ci_method']}; length coef {coefficients['length']:+.3f}"
    )
    return {
        "votes": log.size,
        "contenders": len(log.contenders),
        "snapshot_s": snapshot_s,
        "cpu_s": cpu_s,
        "bt_s": bt_s,
        "style_s": style_s,
        "peak_mb": peak_mb,
        "notes": notes,
    }


def _simulated_votes(size: int, contenders: int):  # type: ignore[no-untyped-def]
    from arena.ratings.style import standardize, style_differences
    from arena.ratings.vote_log import VoteLog

    rng = np.random.default_rng(size)
    strength = rng.normal(0, 0.8, contenders)
    a = rng.integers(0, contenders, size)
    b = (a + rng.integers(1, contenders, size)) % contenders
    features_a = rng.poisson(FEATURE_MEANS, (size, len(FEATURE_MEANS))).astype(np.float64)
    features_b = rng.poisson(FEATURE_MEANS, (size, len(FEATURE_MEANS))).astype(np.float64)
    z, _, _ = standardize(style_differences(features_a, features_b))
    p = 1 / (1 + np.exp(-(strength[a] - strength[b] + z @ STYLE_EFFECT)))
    del z
    outcome = (rng.random(size) < p).astype(np.float64)
    outcome[rng.random(size) < 0.1] = 0.5
    languages = rng.choice(5, size, p=[0.6, 0.15, 0.1, 0.1, 0.05])
    categories = {
        f"language:{code}": np.flatnonzero(languages == i) for i, code in enumerate(["en", "zh", "de", "fr", "ja"])
    }
    gate = {f"contender-{i}{'+gate' if i % 2 else ''}": bool(i % 2) for i in range(contenders)}
    names = list(gate)
    is_gate = np.array([i % 2 == 1 for i in range(contenders)])
    mixed = is_gate[a] != is_gate[b]
    categories["gate vs plain"] = np.flatnonzero(mixed)
    categories["plain only"] = np.flatnonzero(~is_gate[a] & ~is_gate[b])
    # about ten votes per voter, so the voter anomaly test has its real work to do
    voter = rng.integers(0, max(1, size // 10), size)
    log = VoteLog(
        names,
        a,
        b,
        outcome,
        features_a,
        features_b,
        np.arange(size, dtype=np.float64),
        gate,
        categories,
        voter=voter,
        voters=[f"voter-{i}" for i in range(max(1, size // 10))],
    )
    return log, "simulated"


def _real_votes():  # type: ignore[no-untyped-def]
    from arena.ratings.vote_log import VoteLog

    path = REAL_DATA if REAL_DATA.exists() else REAL_DATA_FALLBACK
    data = json.loads(path.read_text())
    pairs = np.asarray(data["X"], dtype=np.int64)
    counts = np.asarray(data["Y"], dtype=np.int64)  # wins i, wins j, ties, both bad
    per_row = counts.sum(axis=1)
    a = np.repeat(pairs[:, 0], per_row)
    b = np.repeat(pairs[:, 1], per_row)
    outcome = np.concatenate([np.repeat([1.0, 0.0, 0.5, 0.5], c) for c in counts])
    rng = np.random.default_rng(7)
    order = rng.permutation(a.size)  # the file has no time order; Elo replays a random one
    a, b, outcome = a[order], b[order], outcome[order]
    size = a.size
    features_a = rng.poisson(FEATURE_MEANS, (size, len(FEATURE_MEANS))).astype(np.float64)
    features_b = rng.poisson(FEATURE_MEANS, (size, len(FEATURE_MEANS))).astype(np.float64)
    log = VoteLog(
        list(data["models"]), a, b, outcome, features_a, features_b, np.arange(size, dtype=np.float64), {}, {}
    )
    return log, "real Chatbot Arena pairs (style features simulated)"


def _command_table(args: argparse.Namespace) -> None:
    import tempfile

    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(
        f"{'votes':>10} {'style':>5} {'format':>7} {'MB':>6} {'read s':>7} {'read cpu':>8} {'library s':>9} "
        f"{'lib cpu':>8} {'command s':>9} {'cmd cpu':>8} {'cpu x read':>10} {'cmd peak MB':>11} {'cpu x file':>9}"
    )
    jobs = [str(n) for n in args.sizes] + ([] if args.no_real else ["real"])
    arena = Path(sys.executable).with_name("arena")
    with tempfile.TemporaryDirectory(prefix="arena-rank-bench-") as folder:
        for job in jobs:
            log = _real_votes()[0] if job == "real" else _simulated_votes(int(job), args.contenders)[0]
            with_style = job != "real"
            formats = [(fmt, with_style) for fmt in args.formats]
            if args.databases and not with_style:
                # a database's answers always carry style counts (zeros for empty ones), so its
                # command fits the style model too: compare it with the same votes' file with style
                formats.append(("parquet", True))
            file_cpu, library = 0.0, {}  # a file with style's command, for the databases' `cpu x file`
            for fmt, style in formats:
                path = Path(folder) / f"votes-{job}.{fmt}"
                _write_export(log, path, style)
                read = _child("--child-read", str(path))
                library = _child("--child-library", str(path), "--rounds", str(args.rounds))
                command_s, command_cpu, peak_mb = _run_command(
                    arena, path, Path(folder) / "snapshot.json", args.rounds, data_dir=Path(folder) / "data"
                )
                file_cpu = file_cpu or (command_cpu if style else 0.0)
                print(
                    f"{log.size:>10,} {'yes' if style else 'no':>5} {fmt:>7} {path.stat().st_size / 1e6:>6.0f} "
                    f"{read['read_s']:>7.2f} {read['read_cpu']:>8.2f} {library['library_s']:>9.2f} "
                    f"{library['library_cpu']:>8.2f} {command_s:>9.2f} {command_cpu:>8.2f} "
                    f"{command_cpu / read['read_cpu']:>10.1f} {peak_mb:>11.0f}"
                )
                path.unlink()
            for kind in args.databases:
                url, drop = _fresh_database(kind, Path(folder), args.postgres)
                data_dir = Path(folder) / f"data-{kind}"  # where the command keeps its copy of the votes
                try:
                    load_s = _load_database(url, log, True, args.answer_chars)
                    read = _child("--child-read-db", url)
                    # first with no copy of the votes (every vote read), then through the copy it left,
                    # after `--new-votes` more were cast
                    for run in ("first", "copy"):
                        if run == "copy":
                            load_s = _load_database(url, log, True, args.answer_chars, more=args.new_votes)
                        command_s, command_cpu, peak_mb = _run_command(
                            arena, None, Path(folder) / "snapshot.json", args.rounds, database=url, data_dir=data_dir
                        )
                        print(
                            f"{log.size:>10,} {'yes':>5} {kind:>7} {run:>6} "
                            f"{read['read_s']:>7.2f} {read['read_cpu']:>8.2f} {library['library_s']:>9.2f} "
                            f"{library['library_cpu']:>8.2f} {command_s:>9.2f} {command_cpu:>8.2f} "
                            f"{command_cpu / read['read_cpu']:>10.1f} {peak_mb:>11.0f} {command_cpu / file_cpu:>9.1f}"
                            f"  (loaded in {load_s:.0f} s)"
                        )
                finally:
                    drop()
                    shutil.rmtree(data_dir, ignore_errors=True)
            del log


def _child(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run_command(
    arena: Path, path: Path | None, output: Path, rounds: int, *, data_dir: Path, database: str | None = None
) -> tuple[float, float, float]:
    """Wall time, CPU time and peak RSS of `arena rank --input FILE` (or, with
    `database`, of `arena rank` reading that database), measured by a small wrapper process."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)\n"
    )
    env = {**os.environ, "ARENA_CONFIG": "/nonexistent/arena.toml", "ARENA_DATA_DIR": str(data_dir)}
    if database is not None:
        env["ARENA_DATABASE_URL"] = database
    source = ["--input", str(path)] if path is not None else []
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            wrapper,
            str(arena),
            "rank",
            *source,
            "--output",
            str(output),
            "--rounds",
            str(rounds),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    seconds, cpu, peak = out.stdout.split()
    return float(seconds), float(cpu), float(peak)


def _time_read(path: Path) -> dict[str, Any]:
    import pyarrow.csv
    import pyarrow.json
    import pyarrow.parquet  # noqa: F401 (imports are not part of the floor)

    from arena.export.columnar import metadata_row_groups, read_vote_table

    # as `arena rank --input` reads: a Parquet file's conv_metadata a row group at a time
    start, cpu = time.perf_counter(), time.process_time()
    table = read_vote_table(path, for_ranking=True)
    assert table is not None, "the file did not take the columnar path"
    for _ in metadata_row_groups(path) or ():
        pass
    return {"read_s": time.perf_counter() - start, "read_cpu": time.process_time() - cpu}


def _time_read_database(url: str) -> dict[str, Any]:
    """The floor from a database: its votes read as ranking's columns."""
    import pyarrow.csv  # noqa: F401 (imports are not part of the floor)

    from arena.db.session import make_engine, make_sessionmaker
    from arena.export.vote_table import read_vote_table

    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        session.connection()
        start, cpu = time.perf_counter(), time.process_time()
        read_vote_table(session)
        took = {"read_s": time.perf_counter() - start, "read_cpu": time.process_time() - cpu}
    engine.dispose()
    return took


def _fresh_database(kind: str, folder: Path, postgres: str):  # type: ignore[no-untyped-def]
    """(url, drop) of a new database at the schema's head."""
    from sqlalchemy.engine import make_url

    from arena.db.migrate import upgrade

    if kind == "sqlite":
        path = folder / "bench.db"
        path.unlink(missing_ok=True)
        url = f"sqlite:///{path}"
        upgrade(url)
        return url, lambda: path.unlink(missing_ok=True)
    import psycopg

    admin = make_url(postgres)
    name = f"geoarena_bench_{os.getpid()}"
    dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(database=name).render_as_string(hide_password=False)
    upgrade(url)

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return url, drop


def _load_database(url: str, log, with_style: bool, answer_chars: int = 0, more: int = 0) -> float:  # type: ignore[no-untyped-def]
    """Write the votes as voted battles with both answers (style counts as the
    runner stores them; none for plain votes, as `arena import` stores FastChat
    rows), in bulk: COPY into PostgreSQL, executemany into SQLite. With
    `answer_chars`, each answer has that much text and a city-level commitment.
    With `more`, add that many votes (the log's first ones again, as new battles)."""
    start = time.perf_counter()
    sha = "0" * 64
    n = more or log.size
    first = log.size if more else 0  # battle numbers are first + i
    names = np.asarray(log.contenders, dtype=object)
    # times as SQLAlchemy writes them into SQLite (UTC, no zone), and with the zone for PostgreSQL
    when = np.char.replace(np.datetime_as_string((log.tstamp * 1e6).astype("datetime64[us]"), unit="us"), "T", " ")
    if not url.startswith("sqlite"):
        when = np.char.add(when, "+00")
    choice = np.array(["b", "tie", "a"])[np.rint(log.outcome * 2).astype(int)]
    gate = np.array([log.gate.get(c, False) for c in log.contenders])
    voters = np.asarray(log.voters, dtype=object)[log.voter] if log.voters else np.full(log.size, "", dtype=object)
    language = np.full(log.size, "", dtype=object)
    for key, rows in log.categories.items():
        if key.startswith("language:"):
            language[rows] = key.removeprefix("language:")

    def style(f) -> str:  # type: ignore[no-untyped-def]
        return (
            f'{{"tokens": {int(f[0])}, "header_count": {{"h1": {int(f[2])}, "h2": 0, "h3": 0, "h4": 0, "h5": 0, '
            f'"h6": 0}}, "list_count": {{"ordered": {int(f[1])}, "unordered": 0}}, "bold_count": {{"**": '
            f'{int(f[3])}, "__": 0}}, "italic_count": {{"*": 0, "_": 0}}, "gps_count": {int(f[4])}, "tool_calls": {int(f[5])}}}'
        )

    def battles(lo: int, hi: int):  # type: ignore[no-untyped-def]
        for i in range(lo, hi):
            bid = f"{first + i:032x}"
            t = when[i]
            yield (bid, t, t, "", sha, names[log.a[i]], names[log.b[i]], "voted", language[i] or None, "[]", "[]", "")

    # varied words, so the database's compression does not shrink the rows to nothing
    words = [f"{word}{j}" for j in range(97) for word in ("street", "sign", "Paris", "evidence", "**roof**")]
    commitment = json.dumps({"lat": 48.86, "lon": 2.35, "level": "city", "place": "Paris", "country": "FR"})

    def answer(i: int) -> str:
        if not answer_chars:
            return ""
        text = " ".join(words[(i * 7 + k * 13) % len(words)] for k in range(answer_chars // 6 + 1))
        return "## Where this was taken\n\n" + text[:answer_chars]

    def responses(lo: int, hi: int):  # type: ignore[no-untyped-def]
        for i in range(lo, hi):
            bid, t = f"{first + i:032x}", when[i]
            for side, c, f in (("a", log.a[i], log.features_a), ("b", log.b[i], log.features_b)):
                stored = (style(f[i]), *(int(v) for v in f[i])) if with_style else (None,) * 7
                text = answer(2 * i + (side == "b"))
                yield (bid, side, names[c], bool(gate[c]), "done", text, "[]", *stored, t, commitment if text else None)

    def votes(lo: int, hi: int):  # type: ignore[no-untyped-def]
        for i in range(lo, hi):
            yield (f"{first + i:032x}", choice[i], voters[i], when[i])

    tables = {
        "battles": "id, created_at, updated_at, prompt, image_sha256, model_a, model_b, status, language, "
        "categories, flags, client_hash",
        "responses": "battle_id, side, contender, gate, status, text, trajectory, style, style_tokens, "
        "style_list_items, style_headers, style_emphasis, style_gps, style_tool_calls, finished_at, commitment",
        "votes": "battle_id, choice, voter_hash, created_at",
    }
    makers = {"battles": battles, "responses": responses, "votes": votes}
    step = 200_000
    if url.startswith("sqlite"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            "INSERT OR IGNORE INTO images (sha256, width, height, size_bytes, created_at) VALUES (?, 0, 0, 0, ?)",
            (sha, when[0]),
        )
        for table, columns in tables.items():
            marks = ", ".join("?" * len(columns.split(",")))
            for lo in range(0, n, step):
                conn.executemany(
                    f"INSERT INTO {table} ({columns}) VALUES ({marks})", makers[table](lo, min(n, lo + step))
                )
        conn.commit()
        conn.close()
    else:
        import psycopg
        from sqlalchemy.engine import make_url

        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn) as conn:
            conn.execute(
                "INSERT INTO images (sha256, width, height, size_bytes, created_at) VALUES (%s, 0, 0, 0, %s) "
                "ON CONFLICT DO NOTHING",
                (sha, when[0]),
            )
            for table, columns in tables.items():
                with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for lo in range(0, n, step):
                        for row in makers[table](lo, min(n, lo + step)):
                            copy.write_row(row)
            conn.execute("ANALYZE")
    return time.perf_counter() - start


def _time_library(path: Path, rounds: int) -> dict[str, Any]:
    from arena.ratings.files import log_from_file
    from arena.ratings.leaderboard import RankOptions, build_snapshot

    log, excluded = log_from_file(path)
    start, cpu = time.perf_counter(), time.process_time()
    build_snapshot(log, RankOptions(rounds=rounds), excluded=excluded)
    return {"library_s": time.perf_counter() - start, "library_cpu": time.process_time() - cpu}


def _write_export(log, path: Path, with_style: bool) -> None:  # type: ignore[no-untyped-def]
    """The votes as an export file with the columns ranking reads, written in bulk."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from arena.export.columnar import RANK_SCHEMA

    names = pa.array(log.contenders)
    columns: dict[str, Any] = {
        "model_a": names.take(pa.array(log.a)),
        "model_b": names.take(pa.array(log.b)),
        "winner": pa.array(np.array(["model_b", "tie", "model_a"])[np.rint(log.outcome * 2).astype(int)]),
        "tstamp": pa.array(log.tstamp if log.tstamp is not None else np.zeros(log.size)),
    }
    if log.voter is not None and log.voters:
        columns["judge"] = pa.array(log.voters).take(pa.array(log.voter))
    gate = np.array([log.gate.get(n, False) for n in log.contenders])
    columns["gate_a"], columns["gate_b"] = pa.array(gate[log.a]), pa.array(gate[log.b])
    language = np.full(log.size, -1)
    codes = [k.removeprefix("language:") for k in log.categories if k.startswith("language:")]
    for i, code in enumerate(codes):
        language[log.categories[f"language:{code}"]] = i
    if codes:
        columns["language_code"] = pa.DictionaryArray.from_arrays(
            pa.array(language, mask=language < 0), pa.array(codes)
        ).cast(pa.string())
    if with_style and log.features_a is not None and log.features_b is not None:
        meta_type = RANK_SCHEMA.field("conv_metadata").type
        zeros = pa.array(np.zeros(log.size, dtype=np.int64))
        children = []
        for side, f in (("a", log.features_a), ("b", log.features_b)):
            counts = f.astype(np.int64)
            children += [
                pa.array(counts[:, 0]),
                pa.StructArray.from_arrays(
                    [pa.array(counts[:, 2])] + [zeros] * 5, names=[f"h{i}" for i in range(1, 7)]
                ),
                pa.StructArray.from_arrays([pa.array(counts[:, 1]), zeros], names=["ordered", "unordered"]),
                pa.StructArray.from_arrays([pa.array(counts[:, 3]), zeros], names=["**", "__"]),
                pa.StructArray.from_arrays([zeros, zeros], names=["*", "_"]),
            ]
            columns[f"gps_count_{side}"] = pa.array(counts[:, 4])
            columns[f"tool_calls_{side}"] = pa.array(counts[:, 5])
        columns["conv_metadata"] = pa.StructArray.from_arrays(children, fields=list(meta_type))
    table = pa.table(columns)
    fmt = path.suffix
    if fmt == ".parquet":
        pq.write_table(table, path, compression="zstd")
    elif fmt == ".jsonl":
        _write_jsonl(table, path)
    else:
        _write_csv(table, path)


def _write_jsonl(table, path: Path) -> None:  # type: ignore[no-untyped-def]
    with path.open("w") as f:
        for batch in table.to_batches(max_chunksize=100_000):
            f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in batch.to_pylist())


def _write_csv(table, path: Path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pa_csv

    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_struct(column.type):
            # a JSON cell, as the exporter writes it
            cells = [json.dumps(v, separators=(",", ":")) for v in column.to_pylist()]
            columns[name] = pa.array(cells)
        elif pa.types.is_boolean(column.type):
            columns[name] = pc.if_else(column, "true", "false")
        else:
            columns[name] = column
    pa_csv.write_csv(pa.table(columns), path)


def _exactness(matchups, full) -> float:  # type: ignore[no-untyped-def]
    """Max distance in rating points from a plain logistic regression of the
    same model (scikit-learn, Newton-Cholesky, no penalty) on the aggregated rows."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    from arena.ratings.bt import to_ratings

    rows = matchups.a.size
    x = np.zeros((2 * rows, matchups.n))
    x[np.arange(rows), matchups.a] = 1
    x[np.arange(rows), matchups.b] = -1
    x[rows:] = x[:rows]
    y = np.r_[np.ones(rows), np.zeros(rows)]
    w = np.r_[matchups.count * matchups.outcome, matchups.count * (1 - matchups.outcome)]
    keep = w > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegression(fit_intercept=False, C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=1000)
        lr.fit(x[keep], y[keep], sample_weight=w[keep])
    return float(np.abs(to_ratings(lr.coef_[0]) - to_ratings(full.theta)).max())


if __name__ == "__main__":
    main()
