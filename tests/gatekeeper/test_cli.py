"""`arena classify` end to end, in process."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from arena.cli import main


class TestClassifyCommand:
    def test_lines_and_jsonl(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "no-pool.toml"))  # the offline pool
        prompts = tmp_path / "prompts.txt"
        prompts.write_text(
            "Where was this picture taken?\n"
            "\n"
            '{"prompt": "How many calories are in this burger?", "id": 7}\n'
            '{"id": 8}\n'
            "这是哪个国家？\n",
            encoding="utf-8",
        )
        assert main(["classify", str(prompts)]) == 0
        captured = capsys.readouterr()
        rows = [json.loads(line) for line in captured.out.splitlines()]
        assert [r["prompt"] for r in rows] == [
            "Where was this picture taken?", "How many calories are in this burger?", "这是哪个国家？"]
        assert [r["geographic"] for r in rows] == [True, False, True]
        assert all(r["classifier"] == "offline" and 0 <= r["score"] <= 1 for r in rows)
        assert "line 4" in captured.err

    def test_standard_input(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "no-pool.toml"))
        monkeypatch.setattr("sys.stdin", io.StringIO("Solve this equation for x\n"))
        assert main(["classify", "--offline"]) == 0
        row = json.loads(capsys.readouterr().out)
        assert row["geographic"] is False and "GeoArena only takes geographic questions" in row["reason"]

    def test_missing_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["classify", str(tmp_path / "missing.txt")]) == 1
        assert "no such file" in capsys.readouterr().err

    def test_evaluate_prints_each_language(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(["classify", "--evaluate"]) == 0
        out = capsys.readouterr().out
        for lang in ("en", "zh", "ja", "ko", "es", "fr", "de", "ru", "ar", "pt"):
            assert f"  {lang}  " in out
