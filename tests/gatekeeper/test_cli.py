"""`arena classify` end to end, in process."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from arena.cli import main
from gatekeeper_build.corpus import LabelledPrompt, load_dataset
from tests.gatekeeper.judge_server import JudgeServer
from tests.servers import serve_in_thread


class TestClassifyCommand:
    def test_lines_and_jsonl(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "no-pool.toml"))  # the offline pool
        prompts = tmp_path / "prompts.txt"
        prompts.write_text(
            "Where was this picture taken?\n"
            "\n"
            '{"prompt": "What breed is this dog?", "id": 7}\n'
            '{"id": 8}\n'
            "这是哪个国家？\n",
            encoding="utf-8",
        )
        assert main(["classify", str(prompts)]) == 0
        captured = capsys.readouterr()
        rows = [json.loads(line) for line in captured.out.splitlines()]
        assert [r["prompt"] for r in rows] == [
            "Where was this picture taken?",
            "What breed is this dog?",
            "这是哪个国家？",
        ]
        assert [r["geographic"] for r in rows] == [True, False, True]
        assert [r["decision"] for r in rows] == ["take", "refuse", "take"]
        assert all(r["classifier"] == "offline" and 0 <= r["score"] <= 1 for r in rows)
        assert "line 4" in captured.err

    def test_standard_input(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "no-pool.toml"))
        monkeypatch.setattr("sys.stdin", io.StringIO("Solve this equation for x\n"))
        assert main(["classify", "--offline"]) == 0
        row = json.loads(capsys.readouterr().out)
        assert row["geographic"] is False and "GeoArena takes questions about the place in your photo" in row["reason"]

    def test_missing_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["classify", str(tmp_path / "missing.txt")]) == 1
        assert "no such file" in capsys.readouterr().err

    def test_evaluate_holds_out_sources_and_forms(self, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
        # A small labelled set of real rows, so the refits take seconds; the build runs in a subprocess.
        folder = tmp_path / "labelled"
        folder.mkdir()
        by_source: dict[tuple[str, str, bool], list[LabelledPrompt]] = {}
        for r in load_dataset():
            if r.lang in ("en", "sw"):
                by_source.setdefault((r.source, r.lang, r.geographic), []).append(r)
        picked = [r for group in by_source.values() for r in group[:8]]
        write_rows(folder / "set.jsonl", picked)
        assert main(["classify", "--evaluate", "--prompts", str(folder), "--max-errors", "5"]) == 0
        out = capfd.readouterr().out
        assert f"{len(picked)} labelled prompts held out 5 folds of sources" in out
        assert f"{len(picked)} labelled prompts held out form by form" in out
        assert "geographic prompts that run, by form:" in out and "non-geographic prompts that run, by form:" in out
        for form in ("choice", "chain", "clue", "colloquial", "preamble"):
            assert f"  {form} " in out
        assert " en " in out and " sw " in out and "errors (" in out

    def test_evaluate_the_unseen_set(self, capfd: pytest.CaptureFixture[str]) -> None:
        assert main(["classify", "--evaluate", "--unseen", "--max-errors", "0"]) == 0
        out = capfd.readouterr().out
        assert "hand-written unseen prompts (never trained on)" in out and "  clue " in out

    async def test_evaluate_the_llm_judge(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
    ) -> None:
        server = JudgeServer()
        with serve_in_thread(server.app) as url:
            pool_file = tmp_path / "arena.toml"
            baselines = "".join(
                f'[[contenders]]\nname = "{m}"\nprovider = "baseline"\nmodel = "{m}"\n\n'
                for m in ("ocr-geolocator", "ocr-geolocator+gate")
            )
            pool_file.write_text(
                baselines + f'[gatekeeper]\nprovider = "openai"\nmodel = "where-judge"\nbase_url = "{url}/v1"\n',
                encoding="utf-8",
            )
            monkeypatch.setenv("ARENA_CONFIG", str(pool_file))
            folder = tmp_path / "labelled"
            folder.mkdir()
            write_rows(
                folder / "set.jsonl",
                [
                    LabelledPrompt("Where was this taken?", True, "en", "a"),
                    LabelledPrompt("Which country is this?", True, "en", "a"),  # the judge misses it
                    LabelledPrompt("Where do I plug in this cable?", False, "en", "b"),  # and accepts this
                    LabelledPrompt("Tell me a joke.", False, "en", "b"),
                ],
            )
            code = await asyncio.to_thread(main, ["classify", "--evaluate", "--llm", "--prompts", str(folder)])
        assert code == 0
        out = capfd.readouterr().out
        assert "LLM gatekeeper llm:where-judge (0 answered by the offline fallback)" in out
        assert "geographic run 0.5000 (1/2)" in out and "not geographic run 0.5000 (1/2)" in out
        assert "'Which country is this?'" in out and "'Where do I plug in this cable?'" in out
        assert len(server.requests) == 4


def write_rows(path: Path, rows: list[LabelledPrompt]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            record = {"prompt": r.prompt, "geographic": r.geographic, "lang": r.lang, "source": r.source}
            record |= {"form": r.form} if r.form else {}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
