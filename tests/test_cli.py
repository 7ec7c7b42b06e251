"""The `arena` console script, run as a person runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect

from arena.db.session import make_engine

ROOT = Path(__file__).resolve().parent.parent
ARENA = str(Path(sys.executable).parent / "arena")


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ARENA, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, cwd=ROOT)


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


class TestDeployment:
    def test_compose_file_is_valid(self):
        compose = shutil.which("docker-compose")
        command = [compose, "config", "-q"] if compose else ["docker", "compose", "config", "-q"]
        if not compose and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode:
            pytest.fail("neither `docker compose` nor `docker-compose` is installed (make test installs it)")
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert result.returncode == 0, result.stderr
