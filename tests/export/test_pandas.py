"""Exports open in pandas the way Chatbot Arena notebooks open clean_battle files."""

from __future__ import annotations

import pandas as pd
import pytest

from arena.db.session import make_engine, make_sessionmaker
from tests.export.seed import seed_arena
from tests.export.test_export import cli

CLEAN_BATTLE_COLUMNS = {
    "question_id",
    "model_a",
    "model_b",
    "winner",
    "judge",
    "turn",
    "anony",
    "language",
    "tstamp",
    "conv_metadata",
}


@pytest.fixture
def export(database_url, tmp_path, monkeypatch):
    sessions = make_sessionmaker(make_engine(database_url))
    with sessions() as session:
        seed_arena(session)

    def write(fmt: str):
        path = tmp_path / f"votes.{fmt}"
        assert cli(monkeypatch, database_url, "export", str(path)) == 0
        return path

    return write


class TestPandas:
    def test_jsonl_reads_with_read_json_lines(self, export):
        frame = pd.read_json(export("jsonl"), lines=True)
        assert set(frame.columns) >= CLEAN_BATTLE_COLUMNS
        assert set(frame["winner"]) <= {"model_a", "model_b", "tie", "tie (bothbad)"}
        # what FastChat's notebooks do first: battle counts and the style metadata
        assert frame.groupby(["model_a", "model_b"]).size().sum() == len(frame)
        meta = frame["conv_metadata"].iloc[0]
        assert {"sum_assistant_a_tokens", "header_count_a", "list_count_a", "bold_count_a"} <= set(meta)

    def test_parquet_and_csv_have_the_same_votes(self, export):
        jsonl = pd.read_json(export("jsonl"), lines=True)
        parquet = pd.read_parquet(export("parquet"))
        csv = pd.read_csv(export("csv"))
        for frame in (parquet, csv):
            assert len(frame) == len(jsonl)
            assert list(frame["winner"]) == list(jsonl["winner"])
            assert list(frame["model_a"]) == list(jsonl["model_a"])


class TestCsvFormulas:
    @pytest.mark.parametrize(
        "text", ['=HYPERLINK("http://x")', "+1", "- a list item", "@SUM(A1)", "'=quoted", "''+twice", "'plain", "plain"]
    )
    def test_formula_cells_are_defused_and_read_back_exactly(self, tmp_path, text):
        from arena.export.readers import iter_rows
        from arena.export.writers import write_rows

        row = {"question_id": "q", "model_a": "x", "model_b": "y", "winner": "model_a", "prompt": text}
        path = tmp_path / "votes.csv"
        path.write_bytes(b"".join(write_rows([row], "csv")))
        cell = pd.read_csv(path, keep_default_na=False)["prompt"][0]
        assert cell[:1] not in ("=", "+", "-", "@")  # a spreadsheet shows it as text
        ((_, back),) = list(iter_rows(path))
        assert back["prompt"] == text
