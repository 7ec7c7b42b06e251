"""The columnar reading path of `arena rank --input` gives exactly the row path's votes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arena.export.columnar import read_vote_table
from arena.export.readers import iter_rows
from arena.ratings.columnar import log_from_table
from arena.ratings.job import log_from_file, log_from_rows
from tests.export.test_format import row, write

TRUTH = {
    "error_km_a": None,
    "error_km_b": None,
    "country": None,
    "continent": None,
    "answer_country_a": None,
    "answer_country_b": None,
}


def varied_rows() -> list[dict]:
    rows = []
    for i in range(40):
        r = row(i, **TRUTH)
        r["model_a"], r["model_b"] = [
            ("geo-large", "geo-small+gate"),
            ("geo-small", "geo-large"),
            ("=cmd", "geo-small"),
            ("geo-small+gate", "geo-small"),
        ][i % 4]
        r["gate_a"], r["gate_b"] = r["model_a"].endswith("+gate"), r["model_b"].endswith("+gate")
        r["judge"] = ["", "v1", "v2", "v1", "v3"][i % 5]
        r["categories"] = [[], ["landmark"], ["street", "street"], ["sign"]][i % 4]
        r["language_code"] = [None, "ja", "en"][i % 3]
        r["language"] = ["unknown", "Japanese", "English", "German"][i % 4]
        r["flags"] = ["identity_leak"] if i % 11 == 3 else []
        r["anony"] = i % 13 != 5
        r["battle_status"] = "abandoned" if i % 17 == 7 else "voted"
        r["sides_done"] = i % 19 != 2
        r["tstamp"] = 1767225600.0 + (i * 7919) % 40
        rows.append(r)
    return rows


def assert_same_log(fast, slow) -> None:  # type: ignore[no-untyped-def]
    (f, f_excluded), (s, s_excluded) = fast, slow
    assert f_excluded == s_excluded
    assert f.contenders == s.contenders and f.voters == s.voters
    for name in ("a", "b", "outcome", "tstamp", "voter"):
        assert np.array_equal(getattr(f, name), getattr(s, name)), name
    assert np.array_equal(f.propensity, s.propensity, equal_nan=True)
    if s.features_a is None:
        assert f.features_a is None and f.features_b is None
    else:
        assert np.array_equal(f.features_a, s.features_a) and np.array_equal(f.features_b, s.features_b)
    assert f.gate == s.gate
    assert f.labelled == s.labelled
    assert sorted(f.categories) == sorted(s.categories)
    for key, rows in s.categories.items():
        assert np.array_equal(f.categories[key], rows), key


class TestColumnarPath:
    @pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
    def test_same_votes_as_the_row_path(self, tmp_path, fmt):
        path = write(tmp_path / f"votes.{fmt}", varied_rows(), fmt)
        table = read_vote_table(path)
        assert table is not None
        fast = log_from_table(table)
        assert fast is not None, "a valid export must take the columnar path"
        slow = log_from_rows(iter_rows(path))
        assert fast[1]  # some votes are excluded, for each reason
        assert set(fast[1]) == {"abandoned", "flagged:identity_leak", "flagged:not_anonymous", "side_failed"}
        assert_same_log(fast, slow)

    def test_votes_without_style_metadata_have_no_features(self, tmp_path):
        rows = [
            {k: v for k, v in r.items() if k not in ("conv_metadata", "gps_count_a", "gps_count_b")}
            for r in varied_rows()
        ]
        path = tmp_path / "votes.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        fast = log_from_table(read_vote_table(path))
        assert fast is not None and fast[0].features_a is None
        assert_same_log(fast, log_from_rows(iter_rows(path)))

    def test_a_bad_row_takes_the_row_path_which_names_it(self, tmp_path):
        rows = varied_rows()
        rows[5]["winner"] = "draw"
        path = write(tmp_path / "votes.parquet", rows, "parquet")
        assert log_from_table(read_vote_table(path)) is None
        with pytest.raises(ValueError, match="row 6: winner must be one of"):
            log_from_file(path)

    @pytest.mark.parametrize(("change", "value"), [("propensity", 1.5), ("model_a", "x" * 101), ("tstamp", -1.0)])
    def test_values_the_validator_refuses_are_not_ranked_in_bulk(self, tmp_path, change, value):
        rows = varied_rows()
        rows[3][change] = value
        path = write(tmp_path / "votes.jsonl", rows, "jsonl")
        assert log_from_table(read_vote_table(path)) is None

    @pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
    def test_labelled_battles_and_agreeing_answers_in_bulk(self, tmp_path, fmt):
        rows = varied_rows()
        rows[0].update(error_km_a=12.0, country="JP", continent="Asia", answer_country_a="JP")
        rows[1].update(error_km_b=5.5, continent="Europe", label_precision_km=750.0, answer_country_b="")
        rows[4].update(country="FR", continent="Europe", answer_country_a="FR", answer_country_b="DE")
        rows[8].update(answer_country_a="JP", answer_country_b="JP")  # unlabelled: the answers agree
        rows[9].update(answer_country_a="", answer_country_b="")
        path = write(tmp_path / f"votes.{fmt}", rows, fmt)
        fast = log_from_table(read_vote_table(path))
        assert fast is not None
        assert_same_log(fast, log_from_rows(iter_rows(path)))
        log = fast[0]
        assert {"continent:Asia", "country:Japan", "continent:Europe", "answers agree:Japan"} <= set(log.categories)
        assert len(log.labelled) == 3 and log.labelled[0].country_hit_a is True

    @pytest.mark.parametrize(
        "change",
        [
            {"error_km_a": 12.0},  # a distance without a label
            {"error_km_a": 30_000.0, "continent": "Asia"},
            {"country": "jp", "continent": "Asia"},
            {"continent": "Atlantis"},
            {"answer_country_b": "Japan"},
        ],
    )
    def test_accuracy_fields_the_validator_refuses_are_not_ranked_in_bulk(self, tmp_path, change):
        rows = varied_rows()
        rows[6].update(change)
        path = write(tmp_path / "votes.jsonl", rows, "jsonl")
        assert log_from_table(read_vote_table(path)) is None
        with pytest.raises(ValueError, match="line 7: "):
            log_from_file(path)

    def test_a_fastchat_file_with_only_the_basic_columns(self, tmp_path):
        rows = [
            {"question_id": str(i), "model_a": "x", "model_b": "y", "winner": w, "tstamp": float(i)}
            for i, w in enumerate(["model_a", "model_b", "tie", "tie (bothbad)"] * 3)
        ]
        path = tmp_path / "votes.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        fast = log_from_table(read_vote_table(path))
        assert fast is not None and fast[0].size == 12 and fast[0].features_a is None
        assert_same_log(fast, log_from_rows(iter_rows(path)))

    def test_some_votes_without_a_battle_status_still_take_the_columnar_path(self, tmp_path):
        rows = varied_rows()
        for r in rows[::3]:
            r["battle_status"] = None
        path = write(tmp_path / "votes.parquet", rows, "parquet")
        fast = log_from_table(read_vote_table(path))
        assert fast is not None
        assert_same_log(fast, log_from_rows(iter_rows(path)))


class TestParquetForRanking:
    """`arena rank --input` reads a Parquet file leaner (conv_metadata a row
    group at a time, names as the file's dictionaries); the votes must be the
    row path's all the same."""

    @staticmethod
    def regrouped(path, rows_per_group: int, change=None):  # type: ignore[no-untyped-def]
        """The file rewritten in row groups of `rows_per_group` rows, names
        dictionary-encoded in an order other than first appearance."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        for name in ("model_a", "model_b", "winner"):
            column = table.column(name).combine_chunks()
            values = pc.unique(column)
            reversed_values = values.take(pa.array(range(len(values) - 1, -1, -1)))
            encoded = pa.DictionaryArray.from_arrays(pc.index_in(column, value_set=reversed_values), reversed_values)
            table = table.set_column(table.schema.get_field_index(name), name, encoded)
        if change is not None:
            table = change(table)
        pq.write_table(table, path, row_group_size=rows_per_group)
        return path

    def test_row_groups_and_dictionaries_give_the_row_paths_votes(self, tmp_path):
        path = self.regrouped(write(tmp_path / "votes.parquet", varied_rows(), "parquet"), 7)
        import pyarrow.parquet as pq

        assert pq.ParquetFile(path).num_row_groups == 6
        fast = log_from_file(path)
        assert fast[0].features_a is not None and fast[0].features_a.dtype == np.int32
        assert_same_log(fast, log_from_rows(iter_rows(path)))

    def test_a_bad_count_in_a_later_row_group_takes_the_row_path(self, tmp_path):
        rows = varied_rows()
        rows[33]["conv_metadata"]["header_count_b"]["h2"] = -1
        path = self.regrouped(write(tmp_path / "votes.parquet", rows, "parquet"), 10)
        with pytest.raises(ValueError, match="row 34: "):
            log_from_file(path)

    @pytest.mark.parametrize(("vote", "styled"), [(26, False), (25, True)])  # 25 is flagged: it does not count
    def test_a_vote_without_conv_metadata_leaves_out_style_if_it_counts(self, tmp_path, vote, styled):
        rows = varied_rows()
        rows[vote]["conv_metadata"] = None
        path = self.regrouped(write(tmp_path / "votes.parquet", rows, "parquet"), 10)
        fast = log_from_file(path)
        assert (fast[0].features_a is not None) == styled
        assert_same_log(fast, log_from_rows(iter_rows(path)))
