"""The `arena` console script, run as a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect

from arena.db.session import make_engine

ROOT = Path(__file__).resolve().parent.parent
ARENA = str(Path(sys.executable).parent / "arena")


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ARENA, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **env}, cwd=ROOT
    )


class TestDbUpgrade:
    def test_builds_the_schema_in_a_fresh_sqlite_dir(self, tmp_path):
        data_dir = tmp_path / "fresh"
        result = run("db", "upgrade", env={"ARENA_DATA_DIR": str(data_dir), "ARENA_DATABASE_URL": ""})
        assert result.returncode == 0, result.stderr
        engine = make_engine(f"sqlite:///{data_dir / 'arena.db'}")
        assert "votes" in inspect(engine).get_table_names()
        engine.dispose()

    def test_upgrades_postgres_and_hides_the_password(self, postgres_url):
        result = run("db", "upgrade", env={"ARENA_DATABASE_URL": postgres_url})
        assert result.returncode == 0, result.stderr
        assert "database at head" in result.stderr


class TestHelp:
    def test_lists_the_commands(self):
        result = run("--help", env={})
        assert result.returncode == 0
        for command in ("serve", "db"):
            assert command in result.stdout

    def test_a_bad_pool_file_is_reported_without_a_traceback(self, tmp_path):
        bad = tmp_path / "arena.toml"
        bad.write_text("[[contenders]\n")
        result = run("serve", "--port", "1", env={"ARENA_CONFIG": str(bad), "ARENA_DATA_DIR": str(tmp_path)})
        assert result.returncode == 1
        assert "not valid TOML" in result.stderr and "Traceback" not in result.stderr


def run_in(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`arena ...` started in `cwd` (outside the project), without the suite's ARENA_ variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.run(
        [ARENA, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "ARENA_CONFIG": str(cwd / "no-pool.toml"), **env},
        cwd=cwd,
    )


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*")) if path.exists() else []


@pytest.fixture(scope="module")
def votes_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real export of a seeded arena, made by the real commands."""
    from arena.db.session import make_sessionmaker
    from tests.export.seed import seed_arena

    home = tmp_path_factory.mktemp("source")
    env = {"ARENA_DATA_DIR": str(home / "data")}
    assert run_in(home, "db", "upgrade", env=env).returncode == 0
    engine = make_engine(f"sqlite:///{home / 'data' / 'arena.db'}")
    with make_sessionmaker(engine)() as session:
        seed_arena(session)
        session.commit()
    engine.dispose()
    path = home / "votes.jsonl"
    result = run_in(home, "export", str(path), env=env)
    assert result.returncode == 0, result.stderr
    assert len(path.read_text().splitlines()) == 15
    return path


NEEDS_SCHEMA = [
    ("rank",),
    ("rank", "--every", "10m"),
    ("export", "out.jsonl"),
    ("import", "VOTES"),
    ("review", "stats"),
    ("reviewers", "list"),
    ("audit", "anonymity"),
]


class TestMissingSchema:
    """Issue 17: no traceback, no empty arena.db, one line naming the fix."""

    @pytest.mark.parametrize("command", NEEDS_SCHEMA, ids=" ".join)
    def test_a_fresh_data_dir_gets_one_line_and_stays_empty(self, tmp_path, votes_file, command):
        data_dir = tmp_path / "data"
        data_dir.mkdir()
        args = [str(votes_file) if a == "VOTES" else a for a in command]
        result = run_in(tmp_path, *args, env={"ARENA_DATA_DIR": str(data_dir)})
        assert result.returncode == 1, (result.stdout, result.stderr)
        expected = (
            f"arena: the database at {data_dir / 'arena.db'} has no schema yet "
            "(or is not at the newest migration): run `arena db upgrade`"
        )
        assert result.stderr.strip() == expected
        assert files_under(data_dir) == [] and not (tmp_path / "out.jsonl").exists()

    def test_the_default_data_dir_of_another_folder_is_named_and_not_made(self, tmp_path):
        # the issue's `unable to open database file`: run outside the project with no ARENA_DATA_DIR
        result = run_in(tmp_path, "rank", env={})
        assert result.returncode == 1
        assert result.stderr.strip().startswith(
            f"arena: the database at {tmp_path / 'arena-data' / 'arena.db'} has no schema"
        )
        assert files_under(tmp_path) == []

    def test_models_lists_the_pool_and_creates_nothing(self, tmp_path):
        result = run_in(tmp_path, "models", env={"ARENA_DATA_DIR": str(tmp_path / "data")})
        assert result.returncode == 0
        assert "ocr-geolocator" in result.stdout and "run `arena db upgrade`" in result.stderr
        assert files_under(tmp_path) == []

    def test_a_database_behind_the_newest_migration_is_refused_untouched(self, tmp_path, votes_file):
        env = {"ARENA_DATA_DIR": str(tmp_path / "data")}
        assert run_in(tmp_path, "db", "upgrade", "0006", env=env).returncode == 0
        db_file = tmp_path / "data" / "arena.db"
        before = db_file.read_bytes()
        result = run_in(tmp_path, "import", str(votes_file), env=env)
        assert result.returncode == 1
        assert "is not at the newest migration): run `arena db upgrade`" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert db_file.read_bytes() == before

    def test_postgres_without_the_schema_is_refused(self, postgres_url):
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url

        admin = create_engine(make_url(postgres_url).set(database="postgres"), isolation_level="AUTOCOMMIT")
        empty = make_url(postgres_url).set(database=f"{make_url(postgres_url).database}_empty_cli")
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{empty.database}"'))
            connection.execute(text(f'CREATE DATABASE "{empty.database}"'))
        try:
            url = empty.render_as_string(hide_password=False)
            result = run_in(Path("/tmp"), "export", "-", env={"ARENA_DATABASE_URL": url})
            assert result.returncode == 1 and result.stdout == ""
            assert "has no schema yet" in result.stderr and "Traceback" not in result.stderr
            assert "run `arena db upgrade`" in result.stderr
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{empty.database}" WITH (FORCE)'))
            admin.dispose()


class TestDataPaths:
    def test_an_upgraded_home_dir_is_the_same_data_from_any_folder(self, tmp_path, votes_file):
        home = tmp_path / "home"
        (home / "elsewhere").mkdir(parents=True)
        env = {"HOME": str(home), "ARENA_DATA_DIR": "~/arena-data"}
        assert run_in(tmp_path, "db", "upgrade", env=env).returncode == 0
        assert (home / "arena-data" / "arena.db").is_file()
        imported = run_in(home / "elsewhere", "import", str(votes_file), env=env)
        assert imported.returncode == 0, imported.stderr
        assert "imported 15 votes" in imported.stderr
        ranked = run_in(Path("/"), "rank", "--ci", "sandwich", env=env)
        assert ranked.returncode == 0, ranked.stderr
        assert "12 votes used, 3 excluded" in ranked.stdout  # as the seed has it
        assert files_under(home / "elsewhere") == []
        # ranking's copy of the votes is kept in the data directory, and the next rank reads through it
        (copy,) = (home / "arena-data" / "rank").glob("votes-*.arrow")
        again = run_in(home / "elsewhere", "rank", "--ci", "sandwich", env=env)
        assert again.returncode == 0, again.stderr
        assert again.stdout.split(":", 1)[1] == ranked.stdout.split(":", 1)[1]  # all but the snapshot's number
        assert list((home / "arena-data" / "rank").iterdir()) == [copy]

    def test_a_relative_data_dir_is_taken_from_the_starting_folder(self, tmp_path):
        assert run_in(tmp_path, "db", "upgrade", env={"ARENA_DATA_DIR": "rel"}).returncode == 0
        assert (tmp_path / "rel" / "arena.db").is_file()
        result = run_in(tmp_path, "rank", "--ci", "sandwich", env={"ARENA_DATA_DIR": "rel"})
        assert result.returncode == 0, result.stderr
