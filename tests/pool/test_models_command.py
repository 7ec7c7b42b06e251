"""Vote counts from the database and `arena models`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.cli import main
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import Battle, ContenderHealth, Image, Vote
from arena.pool.counts import vote_counts

POOL_FILE = """
[[contenders]]
name = "gpt-4o"
provider = "openai"
model = "gpt-4o"
base_url = "https://api.openai.com/v1"
weight = 2

[[contenders]]
name = "claude"
provider = "anthropic"
model = "claude-sonnet-4-5"

[[contenders]]
name = "gemini"
provider = "gemini"
model = "gemini-2.5-flash"
weight = 0

[sampling]
new_contender_boost = 3
boost_until_votes = 2
"""


def seed(url: str) -> None:
    """Three battles: two voted (gpt-4o vs claude, claude vs gemini), one not."""
    engine = make_engine(url)
    with make_sessionmaker(engine).begin() as session:
        session.add(Image(sha256="a" * 64, width=10, height=10, size_bytes=100))
        session.flush()
        battles = [
            Battle(
                prompt="Where?", image_sha256="a" * 64, model_a=a, model_b=b, status="ready", flags=[], categories=[]
            )
            for a, b in (("gpt-4o", "claude"), ("claude", "gemini"), ("gpt-4o", "gemini"))
        ]
        session.add_all(battles)
        session.flush()
        session.add_all(
            [
                Vote(battle_id=battles[0].id, choice="a", voter_hash="v1"),
                Vote(battle_id=battles[1].id, choice="tie", voter_hash="v2"),
            ]
        )
    engine.dispose()


class TestVoteCounts:
    def test_counts_both_sides_of_voted_battles(self, database_url: str) -> None:
        seed(database_url)
        engine = make_engine(database_url)
        with make_sessionmaker(engine)() as session:
            assert vote_counts(session) == {"gpt-4o": 1, "claude": 2, "gemini": 1}
        engine.dispose()


class TestModelsCommand:
    def test_lists_weights_status_and_votes(
        self,
        database_url: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        seed(database_url)
        (tmp_path / "arena.toml").write_text(POOL_FILE)
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "arena.toml"))
        monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
        assert main(["models", "--json"]) == 0
        rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
        # gpt-4o has 1 vote < 2: boosted 2 x 3; claude has 2: plain 1.
        assert rows["gpt-4o"] == {
            "name": "gpt-4o",
            "provider": "openai",
            "model": "gpt-4o",
            "weight": 6.0,
            "gate": False,
            "policy": None,
            "status": "active",
            "votes": 1,
            "tools": None,
            "tools_off": None,
        }
        assert rows["claude"]["weight"] == 1.0 and rows["claude"]["votes"] == 2
        assert rows["gemini"]["status"] == "excluded (weight 0)"

        assert main(["models"]) == 0
        table = capsys.readouterr().out.splitlines()
        assert table[0].split() == ["name", "provider", "model", "weight", "gate", "status", "votes", "tools"]
        assert table[1].split() == ["gpt-4o", "openai", "gpt-4o", "6", "no", "active", "1", "-"]

    def test_shows_the_tools_each_gate_contender_is_offered(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (tmp_path / "arena.toml").write_text(
            POOL_FILE
            + """
[[contenders]]
name = "gpt-4o+search"
provider = "openai"
model = "gpt-4o"
gate = true
tools = ["crop", "web_search", "code_interpreter"]

[[contenders]]
name = "gpt-4o+fixed"
provider = "openai"
model = "gpt-4o"
policy = "fixed"

[tools]
code = false
"""
        )
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "arena.toml"))
        monkeypatch.setenv("ARENA_DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
        monkeypatch.delenv("ARENA_SEARXNG_URL", raising=False)
        assert main(["models", "--json"]) == 0
        rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
        search = rows["gpt-4o+search"]
        assert search["gate"] is True and search["policy"] == "react"
        assert search["tools"] == ["crop"]  # no search backend configured, code turned off
        assert set(search["tools_off"]) == {"web_search", "code_interpreter"}
        assert "code = false" in search["tools_off"]["code_interpreter"]
        fixed = rows["gpt-4o+fixed"]
        assert fixed["policy"] == "fixed" and "crop" in fixed["tools"] and "code_interpreter" not in fixed["tools"]

        assert main(["models"]) == 0
        table = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
        assert table["gpt-4o+search"].endswith("react: crop")
        assert table["gpt-4o+fixed"].split()[-1] != "-" and "fixed: crop" in table["gpt-4o+fixed"]

    def test_shows_the_cooldowns_the_replicas_share(
        self,
        database_url: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        engine = make_engine(database_url)
        with make_sessionmaker(engine).begin() as session:  # a replica cooled claude down until 2099
            session.add(ContenderHealth(contender="claude", failures=0, cooling_until=4_102_444_800.0))
        engine.dispose()
        (tmp_path / "arena.toml").write_text(POOL_FILE)
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "arena.toml"))
        monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
        assert main(["models", "--json"]) == 0
        rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
        assert rows["claude"]["status"] == "cooling down until 2100-01-01 00:00:00 UTC"
        assert rows["gpt-4o"]["status"] == "active"

    def test_without_a_database_the_votes_are_unknown(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "none.toml"))
        monkeypatch.setenv("ARENA_DATABASE_URL", f"sqlite:///{tmp_path / 'missing' / 'arena.db'}")
        assert main(["models", "--json"]) == 0
        captured = capsys.readouterr()
        assert all(json.loads(line)["votes"] is None for line in captured.out.splitlines())
        assert "vote counts unavailable" in captured.err
