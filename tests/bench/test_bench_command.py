"""`arena bench` as a person runs it: pool contenders served over the real
chat-completions protocol on loopback, a loopback LLM judge, real photos,
results in real SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from arena.cli import main
from arena.db.session import make_engine, make_sessionmaker
from arena.db.tables import BenchGrade, BenchResult
from arena.images.store import LocalImageStore
from tests.bench.conftest import PARIS_ROWS, write_dataset
from tests.conftest import SAMPLE_DIR


def write_pool(path, contenders_url: str, judge_url: str | None, judge_model: str = "grader-fair"):
    lines = []
    for name, model in (("echo-a", "echo-one"), ("echo-b", "echo-two"), ("down", "error-500")):
        lines += [
            "[[contenders]]",
            f'name = "{name}"',
            'provider = "openai"',
            f'base_url = "{contenders_url}"',
            f'model = "{model}"',
            "timeout = 10",
            "",
        ]
    lines += [
        "[[contenders]]",
        'name = "ocr-geolocator+gate"',
        'provider = "baseline"',
        'model = "ocr-geolocator"',
        "gate = true",
        "",
    ]
    if judge_url:
        lines += [
            "[judge]",
            'name = "fair-judge"',
            'provider = "openai"',
            f'base_url = "{judge_url}"',
            f'model = "{judge_model}"',
            "timeout = 10",
            "",
        ]
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def arena_env(monkeypatch, tmp_path, database_url, openai_server, judge_server):
    pool = write_pool(tmp_path / "arena.toml", openai_server[0], judge_server[0])
    monkeypatch.setenv("ARENA_CONFIG", str(pool))
    monkeypatch.setenv("ARENA_DATABASE_URL", database_url)
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path / "data"))
    return database_url


def count(url: str, table) -> int:
    engine = make_engine(url)
    with make_sessionmaker(engine)() as session:
        n = session.scalar(select(func.count()).select_from(table))
    engine.dispose()
    return int(n or 0)


class TestBench:
    def test_runs_grades_and_resumes(self, arena_env, tmp_path, capsys):
        dataset = write_dataset(tmp_path / "ds", PARIS_ROWS)
        out = tmp_path / "report.json"
        code = main(["bench", "--dataset", str(dataset), "--contenders", "echo-a,echo-b,down", "--json", str(out)])
        assert code == 0
        report = json.loads(out.read_text())
        assert report["grader"] == "llm:fair-judge" and not report["offline"]
        rows = {r["contender"]: r for r in report["contenders"]}
        # echo answers "Paris": right on question 1 (L1) and wrong on 2; the L2 gold is "330"
        assert rows["echo-a"]["accuracy"]["k"] == 1 and rows["echo-a"]["accuracy"]["n"] == 3
        assert rows["echo-a"]["by_level"]["1"]["rate"] == 0.5
        assert rows["echo-a"]["by_level"]["2"]["rate"] == 0.0
        assert rows["echo-a"]["tokens"]["mean_input"] == 812  # the usage the server reported
        assert 0 < rows["echo-a"]["accuracy"]["ci_low"] < 1 / 3 < rows["echo-a"]["accuracy"]["ci_high"] < 1
        assert rows["down"]["errors"] == 3 and rows["down"]["accuracy"] == {**rows["down"]["accuracy"], "k": 0, "n": 3}
        agreement = report["judge_agreement"]
        assert agreement["runs"] == 6 and agreement["agreement"]["rate"] == 1.0
        assert report["offline_report"]["grader"] == "offline"
        printed = capsys.readouterr()
        assert "LLM judge fair-judge" in printed.out and "judge vs offline grader: 100.0%" in printed.out
        assert "9 runs, 0 finished earlier, 3 failed" in printed.err
        assert count(arena_env, BenchResult) == 9 and count(arena_env, BenchGrade) == 12

        # a rerun asks only the failed pairs again, and grades nothing twice
        assert main(["bench", "--dataset", str(dataset), "--contenders", "echo-a,echo-b,down"]) == 0
        assert "3 runs, 6 finished earlier, 3 failed" in capsys.readouterr().err
        assert count(arena_env, BenchResult) == 9 and count(arena_env, BenchGrade) == 12

        # an edited row runs again for every contender
        rows_edited = [dict(PARIS_ROWS[0], prompt="Where exactly was this taken?"), *PARIS_ROWS[1:]]
        write_dataset(tmp_path / "ds", rows_edited)
        assert main(["bench", "--dataset", str(dataset), "--contenders", "echo-a,echo-b"]) == 0
        assert "2 runs, 4 finished earlier, 0 failed" in capsys.readouterr().err

    def test_offline_grader_without_a_judge(self, monkeypatch, tmp_path, arena_env, openai_server, capsys):
        pool = write_pool(tmp_path / "offline.toml", openai_server[0], None)
        monkeypatch.setenv("ARENA_CONFIG", str(pool))
        dataset = write_dataset(tmp_path / "ds", PARIS_ROWS)
        assert main(["bench", "--dataset", str(dataset), "--contenders", "echo-a", "--json", "-"]) == 0
        printed = capsys.readouterr()
        assert "graded by offline grader" in printed.err  # the table; the JSON alone on stdout
        report = json.loads(printed.out)
        assert report["offline"] and report["contenders"][0]["accuracy"]["k"] == 1
        assert "judge_agreement" not in report

    def test_unknown_contender_and_bad_judge(self, arena_env, tmp_path, capsys):
        dataset = write_dataset(tmp_path / "ds", PARIS_ROWS)
        assert main(["bench", "--dataset", str(dataset), "--contenders", "gpt-9"]) == 1
        assert "unknown contender(s) gpt-9" in capsys.readouterr().err
        assert main(["bench", "--dataset", str(dataset), "--contenders", "echo-a", "--judge", "nobody"]) == 1
        assert "no judge named 'nobody'" in capsys.readouterr().err
        assert (
            main(["bench", "--dataset", str(dataset), "--contenders", "echo-a", "--judge", "ocr-geolocator+gate"]) == 1
        )
        assert "offline baseline, not a model" in capsys.readouterr().err


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_gate_baseline_tool_shares_on_a_real_photo(arena_env, tmp_path, capsys):
    """The real offline GATE baseline on one sample instance: its fixed
    policy's calls are counted per tool for the level."""
    rows = [json.loads((SAMPLE_DIR / "level1_en.jsonl").read_text().splitlines()[1])]  # Anshun
    dataset = write_dataset(tmp_path / "ds", rows)
    out = tmp_path / "r.json"
    # a generous timeout: the shared test machine may be busy, and this is about tool shares, not speed
    assert (
        main(
            [
                "bench",
                "--dataset",
                str(dataset),
                "--contenders",
                "ocr-geolocator+gate",
                "--timeout",
                "900",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    row = json.loads(out.read_text())["contenders"][0]
    assert row["gate"] and row["tool_calls"] > 5
    share = row["tool_share"]["1"]
    assert abs(sum(share.values()) - 1) < 1e-3 and share["super_resolution"] > 0.5  # each policy view is upscaled
    assert row["turns"] == 1  # a fixed policy, one pass: no tool-calling turns with thoughts
    # the photo and every view a step shows are in the image store, as for a battle
    store = LocalImageStore(tmp_path / "data" / "images")
    assert store.exists(rows_photo_sha(dataset))
    engine = make_engine(arena_env)
    with make_sessionmaker(engine)() as session:
        steps = session.scalars(select(BenchResult.trajectory)).one()
    engine.dispose()
    assert steps and all(store.exists(ref) for step in steps for ref in step["image_refs"])


def rows_photo_sha(dataset) -> str:
    from arena.bench.dataset import load_dataset

    return load_dataset(dataset)[0].contender_image().sha256
