"""The admin export endpoint, the export/import commands and the exact round trip."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select

from arena.app import create_app
from arena.cli import main as arena_main
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import STYLE_COLUMNS, Battle, LeaderboardSnapshot, Response, Vote, style_columns
from arena.export.format import FormatError
from arena.export.readers import iter_rows
from arena.ratings.job import log_from_database, log_from_file
from arena.ratings.leaderboard import RankOptions, build_snapshot
from tests.export.seed import seed_arena

TOKEN = "test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def seeded(app) -> None:  # type: ignore[no-untyped-def]
    with app.state.services.database.sessions() as session:
        seed_arena(session)


class TestExportEndpoint:
    async def test_needs_the_admin_token(self, client, app):
        seeded(app)
        assert (await client.get("/api/admin/votes/export")).status_code == 401
        wrong = await client.get("/api/admin/votes/export", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["error"] == "unauthorised"
        assert wrong.headers["www-authenticate"].startswith("Bearer")
        basic = await client.get("/api/admin/votes/export", headers={"Authorization": f"Basic {TOKEN}"})
        assert basic.status_code == 401

    async def test_off_without_a_configured_token(self, settings):
        import httpx

        app = create_app(settings.model_copy(update={"admin_token": ""}))
        transport = httpx.ASGITransport(app=app)
        async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            response = await c.get("/api/admin/votes/export", headers={"Authorization": "Bearer "})
        assert response.status_code == 503 and "ARENA_ADMIN_TOKEN" in response.json()["message"]

    async def test_jsonl_streams_every_vote_with_flags(self, client, app):
        seeded(app)
        response = await client.get("/api/admin/votes/export?format=jsonl", headers=AUTH)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        assert "attachment" in response.headers["content-disposition"]
        rows = [json.loads(line) for line in response.text.splitlines()]
        assert len(rows) == 15
        assert sum(1 for r in rows if r["flags"] == ["identity_leak"]) == 1
        first = rows[0]
        assert first["winner"] == "model_a" and first["language"] == "French" and first["language_code"] == "fr"
        assert first["conv_metadata"]["header_count_a"]["h1"] == 1 and first["gps_count_a"] == 1
        assert first["gate_a"] is False and "answer_a" not in first

    async def test_conv_metadata_counts_the_prompt_as_the_user_turn(self, client, app):
        from arena.answers.style import style_features

        seeded(app)
        response = await client.get("/api/admin/votes/export?format=jsonl", headers=AUTH)
        row = json.loads(response.text.splitlines()[0])
        prompt_tokens = style_features(row["prompt"])["tokens"]
        assert prompt_tokens > 0
        meta = row["conv_metadata"]
        # FastChat: the user's tokens, and each side's context before its answer (one turn: the prompt)
        assert meta["sum_user_tokens"] == meta["context_a_tokens"] == meta["context_b_tokens"] == prompt_tokens

    async def test_since_and_formats(self, client, app):
        seeded(app)
        recent = await client.get("/api/admin/votes/export?format=jsonl&since=2026-01-01T00:10:00Z", headers=AUTH)
        assert len(recent.text.splitlines()) == 5  # minutes 10, 11, 50, 51, 52
        parquet = await client.get("/api/admin/votes/export?format=parquet", headers=AUTH)
        table = pq.read_table(io.BytesIO(parquet.content))
        assert table.num_rows == 15 and "conv_metadata" in table.column_names
        csv_text = (await client.get("/api/admin/votes/export?format=csv&answers=true", headers=AUTH)).text
        assert csv_text.splitlines()[0].endswith("answer_a,answer_b")
        bad = await client.get("/api/admin/votes/export?format=xlsx", headers=AUTH)
        assert bad.status_code == 422 and "jsonl, csv, parquet" in bad.json()["message"]
        bad_since = await client.get("/api/admin/votes/export?since=last-tuesday", headers=AUTH)
        assert bad_since.status_code == 422 and "ISO 8601" in bad_since.json()["message"]

    async def test_since_out_of_the_calendar_is_a_422(self, client, app):
        seeded(app)
        # valid ISO 8601 that no UTC instant can hold (year 1 east of Greenwich, 9999 west of it)
        for since in ("0001-01-01T00:00:00%2B01:00", "9999-12-31T23:59:59-01:00"):
            response = await client.get(f"/api/admin/votes/export?format=jsonl&since={since}", headers=AUTH)
            assert response.status_code == 422, since
            assert "out of range" in response.json()["message"]
        earliest = await client.get("/api/admin/votes/export?format=jsonl&since=0001-01-01", headers=AUTH)
        assert earliest.status_code == 200 and len(earliest.text.splitlines()) == 15

    async def test_since_with_a_utc_offset_means_the_same_instant(self, client, app):
        seeded(app)
        for since in ("2026-01-01T00:10:00Z", "2026-01-01T02:10:00%2B02:00", "2025-12-31T19:10:00-05:00"):
            response = await client.get(f"/api/admin/votes/export?format=jsonl&since={since}", headers=AUTH)
            assert len(response.text.splitlines()) == 5, since


def cli(monkeypatch: pytest.MonkeyPatch, url: str, *args: str) -> int:
    monkeypatch.setenv("ARENA_DATABASE_URL", url)
    monkeypatch.setenv("ARENA_CONFIG", "/nonexistent/arena.toml")
    return arena_main(list(args))


def snapshot_of(log_and_excluded) -> dict:  # type: ignore[no-untyped-def]
    log, excluded = log_and_excluded
    return build_snapshot(log, RankOptions(rounds=25, seed=5), excluded=excluded)


RESULTS = ("leaderboard", "style", "matrices", "categories", "excluded", "votes_used")


class TestRoundTrip:
    @pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
    def test_export_then_rank_the_file_gives_the_same_ratings(self, database_url, tmp_path, monkeypatch, fmt):
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_arena(session)
            from_db = snapshot_of(log_from_database(session))
        path = tmp_path / f"votes.{fmt}"
        assert cli(monkeypatch, database_url, "export", str(path)) == 0
        from_file = snapshot_of(log_from_file(path))
        for key in RESULTS:
            assert from_file[key] == from_db[key], key

    def test_export_import_export_is_identical_and_ranks_the_same(
        self, database_url, tmp_path, monkeypatch, sqlite_template
    ):
        import shutil

        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_arena(session)
            original = snapshot_of(log_from_database(session))
        first = tmp_path / "first.jsonl"
        assert cli(monkeypatch, database_url, "export", str(first), "--answers") == 0
        fresh = tmp_path / "fresh.db"
        shutil.copy(sqlite_template, fresh)
        fresh_url = f"sqlite:///{fresh}"
        assert cli(monkeypatch, fresh_url, "import", str(first)) == 0
        second = tmp_path / "second.jsonl"
        assert cli(monkeypatch, fresh_url, "export", str(second), "--answers") == 0
        assert [json.loads(x) for x in first.read_text().splitlines()] == [
            json.loads(x) for x in second.read_text().splitlines()
        ]
        with make_sessionmaker(make_engine(fresh_url))() as session:
            again = snapshot_of(log_from_database(session))
            # imported answers carry their counts as the integer columns too, not as JSON only
            answers = session.scalars(select(Response)).all()
            assert answers and all(a.style is not None and a.style_tokens is not None for a in answers)
            assert all({c: getattr(a, c) for c in STYLE_COLUMNS} == style_columns(a.style) for a in answers)
        for key in RESULTS:
            assert again[key] == original[key], key
        # importing the same file twice adds nothing
        assert cli(monkeypatch, fresh_url, "import", str(first)) == 0
        with make_sessionmaker(make_engine(fresh_url))() as session:
            assert session.scalar(select(func.count(Vote.id))) == 15

    def test_trajectories_export_import_and_export_again_unchanged(
        self, database_url, tmp_path, monkeypatch, sqlite_template
    ):
        import shutil

        steps = [
            {"tool": "crop", "args": {"image": "img_0", "box": [0.1, 0.2, 0.6, 0.7]}, "observation": "img_1",
             "thought": "The sign.", "image_refs": ["d" * 64], "ok": True},
            {"tool": "web_search", "args": {"query": "Shibuya crossing"}, "observation": "1. Shibuya - Wikipedia",
             "thought": "", "image_refs": [], "ok": True},
        ]  # fmt: skip
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_arena(session)
            gate_side = session.scalars(select(Response).where(Response.gate.is_(True)).order_by(Response.id)).first()
            assert gate_side is not None
            gate_side.trajectory = steps
            session.commit()
            battle_id = gate_side.battle_id
        first = tmp_path / "first.parquet"
        assert cli(monkeypatch, database_url, "export", str(first), "--trajectories") == 0
        rows = {row["question_id"]: row for _, row in iter_rows(first)}
        side = "a" if rows[battle_id]["model_a"] == gate_side.contender else "b"
        exported = rows[battle_id][f"trajectory_{side}"]
        assert [(s["tool"], json.loads(s["arguments"])) for s in exported] == [(s["tool"], s["args"]) for s in steps]
        assert rows[battle_id][f"tool_calls_{side}"] == 2
        assert all("answer_a" not in row for row in rows.values())  # trajectories without the answers
        fresh = tmp_path / "fresh.db"
        shutil.copy(sqlite_template, fresh)
        assert cli(monkeypatch, f"sqlite:///{fresh}", "import", str(first)) == 0
        with make_sessionmaker(make_engine(f"sqlite:///{fresh}"))() as session:
            stored = session.scalars(select(Response).where(Response.battle_id == battle_id, Response.side == side))
            assert stored.one().trajectory == steps
        second = tmp_path / "second.parquet"
        assert cli(monkeypatch, f"sqlite:///{fresh}", "export", str(second), "--trajectories") == 0
        assert [row for _, row in iter_rows(second)] == [row for _, row in iter_rows(first)]

    def test_import_of_bad_rows_names_lines_and_imports_nothing(self, database_url, tmp_path, monkeypatch, capsys):
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_arena(session)
        good = tmp_path / "good.jsonl"
        assert cli(monkeypatch, database_url, "export", str(good)) == 0
        lines = good.read_text().splitlines()
        lines[4] = (
            lines[4]
            .replace('"winner":"model_a"', '"winner":"A"')
            .replace('"winner":"model_b"', '"winner":"A"')
            .replace('"winner":"tie"', '"winner":"A"')
        )
        lines.append('{"model_a": "x"')
        bad = tmp_path / "bad.jsonl"
        bad.write_text("\n".join(lines) + "\n")
        empty = Path(tmp_path / "empty.db")
        from arena.db.migrate import upgrade

        url = f"sqlite:///{empty}"
        upgrade(url)
        assert cli(monkeypatch, url, "import", str(bad)) == 1
        err = capsys.readouterr().err
        assert (
            "line 5: winner must be one of" in err
            and "line 16: not valid JSON" in err
            and "nothing was imported" in err
        )
        with make_sessionmaker(make_engine(url))() as session:
            assert session.scalar(select(func.count(Battle.id))) == 0

    def test_import_of_a_row_the_database_would_refuse_names_its_line(
        self, database_url, tmp_path, monkeypatch, capsys
    ):
        rows = [{"model_a": "x", "model_b": "y", "winner": "model_a", "tstamp": 1.7e9 + i} for i in range(3)]
        rows[2]["language_code"] = "x" * 20  # the column holds 16 characters
        path = tmp_path / "votes.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert cli(monkeypatch, database_url, "import", str(path)) == 1
        err = capsys.readouterr().err
        assert "line 3: language_code" in err and "nothing was imported" in err
        with make_sessionmaker(make_engine(database_url))() as session:
            assert session.scalar(select(func.count(Battle.id))) == 0

    def test_imported_non_anonymous_votes_stay_unranked_and_export_as_such(self, database_url, tmp_path, monkeypatch):
        rows = [
            {
                "question_id": f"q{i}",
                "model_a": "x",
                "model_b": "y",
                "winner": "model_a",
                "tstamp": 1.7e9 + i,
                "anony": i != 1,
            }
            for i in range(3)
        ]
        path = tmp_path / "clean_battle.json"
        path.write_text(json.dumps(rows))
        assert cli(monkeypatch, database_url, "import", str(path)) == 0
        with make_sessionmaker(make_engine(database_url))() as session:
            log, excluded = log_from_database(session)
        assert log.size == 2 and excluded == {"flagged:not_anonymous": 1}
        assert (log.size, excluded) == (log_from_file(path)[0].size, log_from_file(path)[1])
        out = tmp_path / "out.jsonl"
        assert cli(monkeypatch, database_url, "export", str(out)) == 0
        assert [json.loads(x)["anony"] for x in out.read_text().splitlines()] == [True, False, True]

    def test_rank_command_writes_a_snapshot_file_and_a_row(self, database_url, tmp_path, monkeypatch, capsys):
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_arena(session)
        out = tmp_path / "snapshot.json"
        assert cli(monkeypatch, database_url, "rank", "--output", str(out), "--rounds", "10", "--seed", "4") == 0
        snapshot = json.loads(out.read_text())
        assert snapshot["votes_used"] == 12 and snapshot["method"]["rounds"] == 10
        assert cli(monkeypatch, database_url, "rank", "--ci", "sandwich", "--no-style") == 0
        assert "snapshot #1: 12 votes used, 3 excluded" in capsys.readouterr().out
        export = tmp_path / "votes.parquet"
        assert cli(monkeypatch, database_url, "export", str(export)) == 0
        from_file = tmp_path / "from-file.json"
        assert (
            cli(
                monkeypatch,
                database_url,
                "rank",
                "--input",
                str(export),
                "--output",
                str(from_file),
                "--rounds",
                "10",
                "--seed",
                "4",
            )
            == 0
        )
        assert json.loads(from_file.read_text())["leaderboard"] == snapshot["leaderboard"]

    def test_rank_of_a_file_without_output_stores_the_snapshot(self, database_url, tmp_path, monkeypatch, capsys):
        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_arena(session)
        export = tmp_path / "votes.jsonl"
        assert cli(monkeypatch, database_url, "export", str(export)) == 0
        with sessions() as session:
            session.query(Vote).delete()
            session.commit()
        assert cli(monkeypatch, database_url, "rank", "--input", str(export), "--ci", "sandwich") == 0
        assert "snapshot #1: 12 votes used, 3 excluded" in capsys.readouterr().out
        with sessions() as session:
            stored = session.scalars(select(LeaderboardSnapshot)).one()
            assert stored.votes_used == 12

    def test_rank_refuses_every_with_input(self, database_url, tmp_path, monkeypatch, capsys):
        assert cli(monkeypatch, database_url, "rank", "--input", str(tmp_path / "x.jsonl"), "--every", "10m") == 1
        assert "--every" in capsys.readouterr().err

    def test_format_error_is_a_value_error_for_the_cli(self):
        assert issubclass(FormatError, ValueError)


class TestRankEvery:
    def test_recomputes_only_when_new_votes_arrived(self, database_url):
        from arena.ratings.cli import _rank_if_new
        from tests.export.seed import add_voted_battle

        sessions = make_sessionmaker(make_engine(database_url))
        with sessions() as session:
            seed_arena(session)
        options = RankOptions(ci="sandwich")
        marker = _rank_if_new(sessions, options, None, None)
        assert _rank_if_new(sessions, options, None, marker) == marker
        with sessions() as session:
            assert session.scalar(select(func.count()).select_from(LeaderboardSnapshot)) == 1
            add_voted_battle(session, "geo-large", "geo-small", "a", minute=99)
            session.commit()
        assert _rank_if_new(sessions, options, None, marker) != marker
        with sessions() as session:
            assert session.scalar(select(func.count()).select_from(LeaderboardSnapshot)) == 2

    def test_every_survives_a_database_outage(self, postgres_url, monkeypatch, capsys):
        from sqlalchemy.engine import make_url

        class Stop(Exception):
            pass

        sleeps: list[float] = []

        def sleep(seconds: float) -> None:
            sleeps.append(seconds)
            if len(sleeps) == 2:
                raise Stop

        monkeypatch.setattr("arena.ratings.cli.time.sleep", sleep)
        gone = make_url(postgres_url).set(database="geoarena_no_such_database").render_as_string(hide_password=False)
        with pytest.raises(Stop):
            cli(monkeypatch, gone, "rank", "--every", "10m")
        assert sleeps == [600.0, 600.0]  # it kept going after each failed round
        assert capsys.readouterr().err.count("database unavailable, retrying in 600 s") == 2

    def test_durations(self):
        import argparse

        from arena.ratings.cli import parse_duration

        assert parse_duration("10m") == 600 and parse_duration("1.5h") == 5400 and parse_duration("45") == 45
        with pytest.raises(argparse.ArgumentTypeError, match="not a duration"):
            parse_duration("soon")

    def test_progress_bar_only_on_a_terminal(self, monkeypatch):
        import sys

        from arena.ratings.cli import _progress

        monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
        with _progress(RankOptions()) as progress:
            assert progress is None
