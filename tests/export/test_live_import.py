"""`arena import` into the SQLite database of a running arena: battles and votes go on
while it runs (the import commits in short batches, WAL lets readers through), and a file
an attacker shaped (nesting thousands deep, a 200 MB question, broken Unicode) is refused in
one line that names it, without a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle, Vote
from tests.conftest import ROOT, write_pool
from tests.web.conftest import serve_arena

ARENA = Path(sys.executable).with_name("arena")
PROMPT = "Where was this photo taken?"


def votes_file(path: Path, count: int) -> Path:
    with path.open("w") as f:
        for i in range(count):
            row = {
                "question_id": f"imported-{i}",
                "model_a": "old-one",
                "model_b": "old-two",
                "winner": ("model_a", "model_b", "tie")[i % 3],
                "tstamp": 1.7e9 + i,
                "prompt": PROMPT,
                "answer_a": "Probably Lisbon, by the trams. " * 10,
                "answer_b": "Porto, from the tiles. " * 10,
            }
            f.write(json.dumps(row) + "\n")
    return path


def start_import(path: Path, database: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["ARENA_DATABASE_URL"] = f"sqlite:///{database}"
    return subprocess.Popen(
        [str(ARENA), "import", str(path)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


async def battle_and_vote(browser: httpx.AsyncClient, url: str, photo: bytes) -> list[int]:
    created = await browser.post(
        f"{url}/api/battles", files={"image": ("p.jpg", photo, "image/jpeg")}, data={"prompt": PROMPT}
    )
    if created.status_code != 201:
        return [created.status_code]
    body = created.json()
    events = await browser.get(f"{url}{body['events_url']}")
    vote = await browser.post(f"{url}/api/battles/{body['battle_id']}/vote", json={"choice": "a"})
    return [created.status_code, events.status_code, vote.status_code]


class TestImportIntoALiveArena:
    async def test_battles_and_votes_go_on_while_an_import_runs(self, tmp_path, openai_server, photo_bytes):
        base_url, _ = openai_server
        pool = write_pool(tmp_path / "arena.toml", base_url, {"model-one": "echo-one", "model-two": "echo-two"})
        # one browser starts every battle: no reading time, no challenge (the friction is tested elsewhere)
        integrity = 'min_read_seconds = 0\nread_chars_per_second = 1e9\nchallenge = "off"\nvotes_per_day = 0\n'
        pool.write_text(pool.read_text() + "\n[integrity]\n" + integrity)
        rows = votes_file(tmp_path / "votes.jsonl", IMPORTED)
        with serve_arena(tmp_path, pool, env_extra={"ARENA_BATTLES_PER_MINUTE": "0"}) as server:
            imported = make_sessionmaker(make_engine(f"sqlite:///{server.database}"))
            importer = start_import(rows, server.database)
            # (imported votes seen before the battle, after it, the battle's answers)
            during: list[tuple[int, int, list[int]]] = []
            async with httpx.AsyncClient(timeout=60, trust_env=False) as browser:
                while importer.poll() is None:
                    before = imported_votes(imported)
                    codes = await battle_and_vote(browser, server.url, photo_bytes)
                    during.append((before, imported_votes(imported), codes))
            _, err = importer.communicate()
            assert importer.returncode == 0, err.decode()
            assert f"imported {IMPORTED} votes".encode() in err
            assert all(codes == [201, 200, 200] for *_, codes in during), (during, server.log_tail())
            # Battles finished while the import was part-way through its rows: an import in one
            # transaction shows 0, then all of them, and holds the write lock in between.
            midway = [codes for before, after, codes in during if before > 0 and after < IMPORTED]
            assert len(midway) >= 3, during
        with imported() as session:
            assert session.scalar(select(func.count(Vote.id))) == IMPORTED + len(during)


IMPORTED = 40_000


def imported_votes(sessions) -> int:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return int(session.scalar(select(func.count(Battle.id)).where(Battle.model_a == "old-one")) or 0)


def run_import(path: Path, database: Path) -> tuple[int, str]:
    process = start_import(path, database)
    _, err = process.communicate(timeout=300)
    return process.returncode, err.decode()


@pytest.fixture
def empty_database(tmp_path, sqlite_template) -> Path:
    import shutil

    path = tmp_path / "arena.db"
    shutil.copy(sqlite_template, path)
    return path


VOTE = {"model_a": "x", "model_b": "y", "winner": "model_a", "tstamp": 1.7e9}


class TestImportLimits:
    def test_deeply_nested_json_is_refused_in_one_line(self, tmp_path, empty_database):
        deep = "[" * 100_000 + "]" * 100_000
        jsonl = tmp_path / "deep.jsonl"
        jsonl.write_text(json.dumps(VOTE)[:-1] + f', "conv_metadata": {deep}}}\n')
        array = tmp_path / "deep.json"
        array.write_text(f"[{deep}]")
        for path in (jsonl, array):
            code, err = run_import(path, empty_database)
            assert code == 1 and "Traceback" not in err and "RecursionError" not in err, err
            assert "line 1: nested too deeply" in err and "nothing was imported" in err

    def test_a_huge_prompt_is_refused_before_it_is_read_whole(self, tmp_path, empty_database):
        path = tmp_path / "huge.jsonl"
        with path.open("w") as f:
            f.write(json.dumps(VOTE) + "\n")
            f.write(json.dumps(dict(VOTE, prompt="x" * 200_000_000)) + "\n")
        code, err = run_import(path, empty_database)
        assert code == 1 and "Traceback" not in err, err
        assert "line 2: the line is longer than 16,777,216 characters" in err

    def test_a_long_prompt_within_a_line_is_refused_by_its_limit(self, tmp_path, empty_database):
        path = tmp_path / "long.jsonl"
        path.write_text(json.dumps(dict(VOTE, prompt="x" * 150_000)) + "\n")
        code, err = run_import(path, empty_database)
        assert code == 1 and "line 1: prompt is 150,000 characters long; the limit is 100,000" in err, err

    def test_a_lone_surrogate_is_refused_not_a_codec_error(self, tmp_path, empty_database):
        path = tmp_path / "surrogate.jsonl"
        path.write_text(json.dumps(VOTE)[:-1] + ', "prompt": "Where \\ud800?"}\n')
        code, err = run_import(path, empty_database)
        assert code == 1 and "codec" not in err, err
        assert "line 1: prompt must not contain NUL characters or broken Unicode" in err

    def test_an_oversized_csv_cell_is_refused_in_one_line(self, tmp_path, empty_database):
        path = tmp_path / "votes.csv"
        path.write_text("model_a,model_b,winner,tstamp,prompt\n" + f"x,y,model_a,1700000000,{'z' * 17_000_000}\n")
        code, err = run_import(path, empty_database)
        assert code == 1 and "Traceback" not in err, err
        assert "not a readable CSV record" in err and "field larger than field limit" in err
