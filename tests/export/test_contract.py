"""The writers, the readers (row and columnar) and the importer agree with `CleanBattleRow`."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arena.answers.style import TOKEN, style_features
from arena.db.session import make_engine, make_sessionmaker
from arena.export.columnar import RANK_SCHEMA, read_vote_table
from arena.export.contract import ANSWER_COLUMNS, COLUMNS, TRAJECTORY_COLUMNS, CleanBattleRow, arrow_schema
from arena.export.db import export_rows, import_rows
from arena.export.format import conv_metadata, validate_row
from arena.export.readers import iter_rows
from arena.export.writers import write_rows

HINTS = typing.get_type_hints(CleanBattleRow)
PROMPT = "Where is this? 日本"


def full_row(i: int, *, optional: bool = True) -> CleanBattleRow:
    """A row with every field set (nulls where the contract allows them, on odd
    rows), and with `optional` the answers and trajectories too."""
    row: CleanBattleRow = {
        "question_id": f"{i + 1:032x}",
        "model_a": "geo-large",
        "model_b": "geo-small+gate",
        "winner": ("model_a", "model_b", "tie", "tie (bothbad)")[i % 4],
        "judge": f"{i:064x}",
        "turn": 1,
        "anony": True,
        "language": "Japanese" if i % 2 == 0 else "unknown",
        "tstamp": 1767225600.5 + i,
        "conv_metadata": conv_metadata(
            style_features("# Tokyo\n- a\n- b\n**bold**"),
            style_features("*Japan*"),
            prompt_tokens=len(TOKEN.findall(PROMPT)),
        ),
        "dedup_tag": {"high_freq": False, "sampled": True},
        "prompt": PROMPT,
        "image_sha256": "b" * 64,
        "language_code": "ja" if i % 2 == 0 else None,
        "gps_count_a": i,
        "gps_count_b": 0,
        "gate_a": False,
        "gate_b": True,
        "tool_calls_a": 0,
        "tool_calls_b": 3 + i,
        "categories": ["landmark", "=formula"],
        "flags": [],
        "battle_status": "voted",
        "sides_done": True,
        "error_km_a": 12.5 if i % 2 == 0 else None,
        "error_km_b": None,
        "country": "JP" if i % 2 == 0 else None,
        "continent": "Asia" if i % 2 == 0 else None,
        "answer_country_a": "JP",
        "answer_country_b": None,
        "label_precision_km": 1.0 if i % 2 == 0 else None,
        "propensity": 0.25 if i % 2 == 0 else None,
    }
    if optional:
        row["answer_a"] = "# Tokyo\n- a\n- b\n**bold**"
        row["answer_b"] = "=SUM(A1) *Japan*"  # a formula the CSV writer must quote
        row["trajectory_a"] = []  # a plain side
        row["trajectory_b"] = [
            {
                "tool": "crop",
                "arguments": '{"box": [0.1, 0.2, 0.5, 0.6], "image": "img_0"}',
                "ok": True,
                "thought": "The sign, closer.",
                "observation": "img_1: the crop, 512x512",
                "image_refs": ["c" * 64],
            },
            {
                "tool": "web_search",
                "arguments": '{"query": "=渋谷"}',
                "ok": False,
                "thought": "",
                "observation": "",
                "image_refs": [],
            },
        ][: 1 + i % 2]
    return row


def conforms(value: Any, hint: Any) -> bool:
    """Whether a parsed value has the type the contract's annotation says."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin is list:
        return isinstance(value, list) and all(conforms(v, typing.get_args(hint)[0]) for v in value)
    if typing.is_typeddict(hint):
        fields = typing.get_type_hints(hint)
        return (
            isinstance(value, dict) and set(value) == set(fields) and all(conforms(value[k], fields[k]) for k in fields)
        )
    if hint is float:
        return isinstance(value, float)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def write(path: Path, rows: list[CleanBattleRow], *, optional: bool) -> Path:
    path.write_bytes(b"".join(write_rows(rows, path.suffix[1:], answers=optional, trajectories=optional)))
    return path


class TestContract:
    def test_columns_follow_the_typed_row(self):
        assert tuple(HINTS) == COLUMNS + ANSWER_COLUMNS + TRAJECTORY_COLUMNS
        assert tuple(sorted(CleanBattleRow.__optional_keys__)) == ANSWER_COLUMNS + TRAJECTORY_COLUMNS
        assert conforms(full_row(0), CleanBattleRow) and conforms(full_row(1), CleanBattleRow)
        assert validate_row(full_row(0)) == [] and validate_row(full_row(1)) == []

    @pytest.mark.parametrize("optional", [False, True])
    def test_the_parquet_writer_writes_the_contract_schema(self, tmp_path, optional):
        path = write(tmp_path / "votes.parquet", [full_row(0, optional=optional)], optional=optional)
        assert pq.read_schema(path).remove_metadata() == arrow_schema(answers=optional, trajectories=optional)
        assert pq.read_schema(path).names == list(COLUMNS + (ANSWER_COLUMNS + TRAJECTORY_COLUMNS if optional else ()))

    @pytest.mark.parametrize("optional", [False, True])
    def test_the_text_writers_write_the_contract_columns_in_order(self, tmp_path, optional):
        rows = [full_row(i, optional=optional) for i in range(2)]
        names = list(COLUMNS + (ANSWER_COLUMNS + TRAJECTORY_COLUMNS if optional else ()))
        lines = write(tmp_path / "votes.jsonl", rows, optional=optional).read_text().splitlines()
        assert [list(json.loads(line)) for line in lines] == [names, names]
        header = write(tmp_path / "votes.csv", rows, optional=optional).read_text().splitlines()[0]
        assert header.split(",") == names

    @pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
    def test_the_row_reader_gives_back_the_typed_row(self, tmp_path, suffix):
        rows = [full_row(i) for i in range(4)]
        path = write(tmp_path / f"votes{suffix}", rows, optional=True)
        read = [row for _, row in iter_rows(path)]
        assert read == rows
        for row in read:
            assert conforms(row, CleanBattleRow), row

    @pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
    def test_the_columnar_reader_reads_the_contract_projected(self, tmp_path, suffix):
        full = arrow_schema(answers=True, trajectories=True)
        for field in RANK_SCHEMA:
            want = full.field(field.name).type
            if pa.types.is_struct(want):
                assert {f.name: f.type for f in field.type}.items() <= {f.name: f.type for f in want}.items()
            else:
                assert field.type == want, field.name
        rows = [full_row(i) for i in range(4)]
        table = read_vote_table(write(tmp_path / f"votes{suffix}", rows, optional=True))
        assert table is not None and table.schema == RANK_SCHEMA
        for name in RANK_SCHEMA.names:
            if name == "conv_metadata":
                continue
            assert table.column(name).to_pylist() == [row[name] for row in rows], name  # type: ignore[literal-required]
        metadata = table.column("conv_metadata").to_pylist()
        for got, row in zip(metadata, rows, strict=True):
            assert got == {k: row["conv_metadata"][k] for k in got}  # type: ignore[literal-required]

    def test_the_importer_stores_what_the_exporter_writes_back(self, database_url):
        sessions = make_sessionmaker(make_engine(database_url))
        # unlabelled rows: an import keeps no location labels (there is no point to store)
        rows = [full_row(i) for i in range(1, 8, 2)]
        with sessions() as session:
            assert import_rows(session, rows).imported == 4
            session.commit()
        with sessions() as session:
            exported = list(export_rows(session, answers=True, trajectories=True))
        for row in exported:
            assert conforms(row, CleanBattleRow), row
        assert [{k: r[k] for k in HINTS if k != "answer_country_a"} for r in exported] == [  # type: ignore[literal-required]
            {k: r[k] for k in HINTS if k != "answer_country_a"}  # type: ignore[literal-required]
            for r in rows
        ]
