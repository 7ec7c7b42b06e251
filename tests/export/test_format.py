"""The clean_battle row format: writers, readers and validation."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arena.answers.style import feature_vector, style_features
from arena.export.format import (
    FormatError,
    conv_metadata,
    language_name,
    row_features,
    validate_row,
)
from arena.export.readers import check_file, iter_rows
from arena.export.writers import write_rows
from arena.ratings.job import log_from_file

ANSWER_A = "# Tokyo\n\n**Tokyo Tower** at 35.6586° N, 139.7454° E\n- orange lattice\n- Minato"
ANSWER_B = "Somewhere in *Japan*."


def row(i: int = 0, **over) -> dict:
    base = {
        "question_id": f"{i:032x}",
        "model_a": "geo-large",
        "model_b": "geo-small+gate",
        "winner": ["model_a", "model_b", "tie", "tie (bothbad)"][i % 4],
        "judge": "f" * 64,
        "turn": 1,
        "anony": True,
        "language": "Japanese",
        "tstamp": 1767225600.0 + i,
        "conv_metadata": conv_metadata(style_features(ANSWER_A), style_features(ANSWER_B)),
        "dedup_tag": {"high_freq": False, "sampled": True},
        "prompt": "Where is this? 日本",
        "image_sha256": "a" * 64,
        "language_code": "ja",
        "gps_count_a": 1,
        "gps_count_b": 0,
        "gate_a": False,
        "gate_b": True,
        "tool_calls_a": 0,
        "tool_calls_b": 2,
        "categories": ["landmark"],
        "flags": [],
        "battle_status": "voted",
        "sides_done": True,
        # a labelled battle on even rows (side b named no place), unlabelled on odd ones
        "error_km_a": 12.0 if i % 2 == 0 else None,
        "error_km_b": None,
        "country": "JP" if i % 2 == 0 else None,
        "continent": "Asia" if i % 2 == 0 else None,
        "answer_country_a": "JP",
        "answer_country_b": None,
        "propensity": None if i % 3 else 1 / (i + 3),  # unknown for older battles
        "label_precision_km": 1.0 if i % 2 == 0 else None,
    }
    return {**base, **over}


def write(path: Path, rows: list[dict], fmt: str) -> Path:
    path.write_bytes(b"".join(write_rows(iter(rows), fmt)))
    return path


class TestRow:
    def test_conv_metadata_has_fastchat_keys(self):
        meta = row()["conv_metadata"]
        assert meta["sum_assistant_a_tokens"] == style_features(ANSWER_A)["tokens"]
        assert meta["header_count_a"] == {"h1": 1, "h2": 0, "h3": 0, "h4": 0, "h5": 0, "h6": 0}
        assert meta["list_count_a"] == {"ordered": 0, "unordered": 2}
        assert meta["bold_count_a"] == {"**": 1, "__": 0}
        assert meta["italic_count_b"] == {"*": 1, "_": 0}

    def test_features_survive_the_row(self):
        fa, fb = row_features(row())
        assert fa == feature_vector(style_features(ANSWER_A))
        assert fb == feature_vector({**style_features(ANSWER_B), "tool_calls": 2})

    def test_language_names_follow_fastchat(self):
        assert language_name("en") == "English" and language_name("ja") == "Japanese"
        assert language_name(None) == "unknown"

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ({"winner": "model_c"}, "winner must be one of"),
            ({"model_b": "geo-large"}, "the same contender"),
            ({"model_a": ""}, "model_a must be a non-empty string"),
            ({"tstamp": "yesterday"}, "tstamp must be a number"),
            ({"image_sha256": "xyz"}, "64 lowercase hex"),
            ({"flags": "identity_leak"}, "flags must be a list of strings"),
            ({"gate_a": "yes"}, "gate_a must be true or false"),
            ({"battle_status": "lost"}, "battle_status must be one of"),
            ({"conv_metadata": {"header_count_a": {"h1": -1}}}, "whole numbers >= 0"),
            # rows the database would refuse mid-import (or a timestamp no date can hold)
            ({"tstamp": float("nan")}, "tstamp must be a number"),
            ({"tstamp": 1e20}, "tstamp must be a number"),
            ({"language_code": "x" * 17}, "language_code is 17 characters long; the limit is 16"),
            ({"prompt": "a\x00b"}, "prompt must not contain NUL"),
            ({"answer_b": "\x00"}, "answer_b must not contain NUL"),
            ({"conv_metadata": {"sum_assistant_b_tokens": 2**31}}, "sum_assistant_b_tokens must be a whole number"),
            ({"error_km_a": -1.0}, "error_km_a must be a distance in km"),
            ({"error_km_b": "far"}, "error_km_b must be a distance in km"),
            ({"country": "Japan"}, "country must be an ISO 3166-1 alpha-2 code"),
            ({"continent": "Atlantis"}, "continent must be one of"),
            ({"continent": None, "country": None}, "need the label's continent"),
            ({"propensity": 0.0}, "propensity must be a probability in (0, 1]"),
            ({"propensity": 1.5}, "propensity must be a probability"),
            ({"propensity": float("nan")}, "propensity must be a probability"),
            ({"propensity": "half"}, "propensity must be a probability"),
        ],
    )
    def test_bad_rows_say_why(self, change, reason):
        problems = validate_row(row(**change))
        assert any(reason in p for p in problems), problems

    def test_a_fastchat_row_without_our_fields_is_valid(self):
        fastchat = {
            k: row()[k]
            for k in (
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
            )
        }
        assert validate_row(fastchat) == []


class TestFiles:
    @pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
    def test_round_trip_keeps_every_field(self, tmp_path, fmt):
        rows = [row(i) for i in range(7)] + [row(7, language_code=None, language="unknown", flags=["identity_leak"])]
        path = write(tmp_path / f"votes.{fmt}", rows, fmt)
        back = [r for _, r in iter_rows(path)]
        assert back == rows
        assert check_file(path) == 8

    def test_csv_with_an_answer_longer_than_the_csv_modules_default_cell_limit_reads_back(self, tmp_path):
        rows = [row(0, answer_a="x " * 100_000, answer_b="y")]
        path = tmp_path / "votes.csv"
        path.write_bytes(b"".join(write_rows(iter(rows), "csv", answers=True)))
        assert [r for _, r in iter_rows(path)] == rows

    def test_parquet_is_written_in_row_groups_and_opens_in_pyarrow(self, tmp_path):
        rows = [row(i) for i in range(12_000)]
        path = write(tmp_path / "votes.parquet", rows, "parquet")
        parquet = pq.ParquetFile(path)
        assert parquet.metadata.num_rows == 12_000 and parquet.metadata.num_row_groups >= 3
        table = parquet.read(columns=["model_a", "winner", "conv_metadata"])
        assert table.column("conv_metadata")[0].as_py()["bold_count_a"] == {"**": 1, "__": 0}

    def test_jsonl_is_one_json_object_per_line_with_the_clean_battle_columns(self, tmp_path):
        path = write(tmp_path / "votes.jsonl", [row(0), row(1)], "jsonl")
        lines = path.read_text().splitlines()
        assert len(lines) == 2
        first = json.loads(lines[0])
        assert list(first)[:10] == [
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
        ]

    def test_csv_header_and_nested_cells(self, tmp_path):
        path = write(tmp_path / "votes.csv", [row(0)], "csv")
        record = next(csv.DictReader(io.StringIO(path.read_text())))
        assert json.loads(record["categories"]) == ["landmark"] and record["gate_b"] == "true"

    def test_bad_rows_are_reported_by_line_and_nothing_is_ranked(self, tmp_path):
        path = tmp_path / "votes.jsonl"
        lines = [
            json.dumps(row(0)),
            json.dumps(row(1, winner="draw")),
            "{not json",
            json.dumps(row(3, model_b="geo-large")),
        ]
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(FormatError) as caught:
            check_file(path)
        text = str(caught.value)
        assert "line 2: winner must be one of" in text
        assert "line 3: not valid JSON" in text
        assert "line 4: model_a and model_b are the same contender" in text
        assert "nothing was imported" in text
        with pytest.raises(FormatError):
            log_from_file(path)

    def test_bad_csv_cell_names_its_line(self, tmp_path):
        path = write(tmp_path / "votes.csv", [row(0), row(1)], "csv")
        text = path.read_text().splitlines()
        text[2] = text[2].replace(",true,", ",maybe,", 1)
        path.write_text("\n".join(text) + "\n")
        with pytest.raises(FormatError, match=r"line 3: \w+ must be true or false"):
            check_file(path)

    def test_fastchat_json_array_ranks(self, tmp_path):
        rows = [
            {
                k: v
                for k, v in row(i).items()
                if k
                not in (
                    "language_code",
                    "gate_a",
                    "gate_b",
                    "categories",
                    "flags",
                    "gps_count_a",
                    "gps_count_b",
                    "battle_status",
                    "sides_done",
                )
            }
            for i in range(6)
        ]
        path = tmp_path / "clean_battle.json"
        path.write_text(json.dumps(rows))
        log, excluded = log_from_file(path)
        assert log.size == 6 and excluded == {}
        assert "language:Japanese" in log.categories

    def test_fastchat_votes_cast_after_the_names_were_shown_are_not_ranked(self, tmp_path):
        # FastChat's elo_analysis rates only anonymous battles (anony true)
        rows = [row(i, anony=i % 3 != 0) for i in range(6)]
        path = write(tmp_path / "votes.jsonl", rows, "jsonl")
        log, excluded = log_from_file(path)
        assert log.size == 4 and excluded == {"flagged:not_anonymous": 2}

    def test_unknown_suffix_is_refused(self, tmp_path):
        path = tmp_path / "votes.xlsx"
        path.write_bytes(b"")
        with pytest.raises(FormatError, match="unknown file type"):
            check_file(path)
