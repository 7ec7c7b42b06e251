"""`arena judge` against loopback vision judges speaking chat completions,
on voted battles in real SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from arena.cli import main
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import JudgeVerdict
from arena.judge.verdict import MalformedVerdict, parse_vote
from tests.judge.seed import seed


def write_pool(path, judge_url: str, contenders_url: str) -> None:
    lines = []
    for name in ("geo-large", "geo-small"):
        lines += [
            "[[contenders]]",
            f'name = "{name}"',
            'provider = "openai"',
            f'base_url = "{contenders_url}"',
            'model = "echo-one"',
            "",
        ]
    for name, model in (("longer", "voter-vision"), ("first", "voter-first"), ("down", "error-500")):
        lines += [
            "[[contenders]]",
            f'name = "{name}"',
            'provider = "openai"',
            f'base_url = "{judge_url}"',
            f'model = "{model}"',
            "weight = 0",
            "timeout = 10",
            "",
        ]
    path.write_text("\n".join(lines))


@pytest.fixture
def sessions(monkeypatch, tmp_path, database_url, judge_server, openai_server):
    write_pool(tmp_path / "arena.toml", judge_server[0], openai_server[0])
    monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "arena.toml"))
    monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path / "data"))
    engine = make_engine(database_url)
    maker = make_sessionmaker(engine)
    with maker() as session:
        seed(session, tmp_path / "data")
    yield maker
    engine.dispose()


class TestJudgeCommand:
    def test_agreement_per_class_kappa_and_consistency(self, sessions, tmp_path, capsys, judge_server):
        out = tmp_path / "judge.json"
        before = len(judge_server[1].requests)
        assert main(["judge", "--judge", "longer", "--json", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report["battles"] == 5  # the failed side and the unvoted battle are left out
        assert report["agreement"]["k"] == 3 and report["agreement"]["n"] == 5
        assert report["by_class"]["a"]["rate"] == 0.5 and report["by_class"]["b"]["rate"] == 0.5
        assert report["by_class"]["tie"]["rate"] == 1.0 and report["by_class"]["both_bad"]["n"] == 0
        assert report["position_consistency"]["rate"] == 1.0
        assert report["kappa"] == pytest.approx(0.375, abs=1e-3)  # po 0.6, pe 0.36
        board = {r["contender"]: r for r in report["board"]}
        assert board["geo-large"]["battles"] == 5
        printed = capsys.readouterr().out
        assert "agreement with the human votes 60.0%" in printed and "human right win" in printed
        # the judge saw the photo (voter-vision refuses without it) in both orders
        sent = [r for r in judge_server[1].requests[before:] if r["model"] == "voter-vision"]
        assert len(sent) == 10 and all(isinstance(r["messages"][-1]["content"], list) for r in sent)

        # stored: a rerun judges nothing new and reports the same figures
        assert main(["judge", "--judge", "longer"]) == 0
        assert "0 battles judged" in capsys.readouterr().err
        with sessions() as session:
            assert len(session.scalars(select(JudgeVerdict)).all()) == 5

    def test_a_position_biased_judge_is_caught(self, sessions, capsys):
        assert main(["judge", "--judge", "first", "--json", "-"]) == 0
        report = json.loads(capsys.readouterr().out)  # the JSON alone: the figures went to stderr
        assert report["position_consistency"]["rate"] == 0.0
        # every flip becomes a tie: it agrees only with the human tie
        assert report["agreement"]["k"] == 1
        with sessions() as session:
            verdict = session.scalars(select(JudgeVerdict)).first()
            assert (verdict.choice_ab, verdict.choice_ba, verdict.choice) == ("a", "b", "tie")

    def test_a_failing_judge_stores_nothing_and_exits_1(self, sessions, capsys):
        # a script or a scheduler must see that the judge is down: every battle failed
        assert main(["judge", "--judge", "down"]) == 1
        err = capsys.readouterr().err
        assert "0 battles judged, 5 failed" in err
        assert "arena: judge down could not judge any of the 5 battles it tried" in err
        with sessions() as session:
            assert session.scalars(select(JudgeVerdict)).first() is None

    def test_no_judge_configured(self, sessions, capsys):
        assert main(["judge"]) == 1
        assert "no judge configured" in capsys.readouterr().err


class TestParseVote:
    def test_strict(self):
        assert parse_vote('{"reasoning": "r", "winner": "2"}') == ("2", "r")
        assert parse_vote('```json\n{"winner": 1}\n```')[0] == "1"
        for bad in ('{"winner": "A"}', "Answer 1 is better.", '{"winner": true}', '["1"]'):
            with pytest.raises(MalformedVerdict):
                parse_vote(bad)
