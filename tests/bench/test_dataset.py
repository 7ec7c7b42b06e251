"""Loading GeoBrowse-format files: the shared sample, and bad files."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from arena.bench.dataset import DatasetError, load_dataset, split_steps
from tests.conftest import SAMPLE_DIR


class TestSharedSample:
    def test_both_levels_load_with_their_gold_answers(self):
        level1 = load_dataset(SAMPLE_DIR / "level1_en.jsonl")
        level2 = load_dataset(SAMPLE_DIR / "level2_en.jsonl")
        assert len(level1) == 10 and {i.level for i in level1} == {1}
        assert len(level2) == 4 and {i.level for i in level2} == {2}
        japan = next(i for i in level2 if i.question_id == "1")
        assert japan.key == "L2-1" and japan.gold == "3%" and japan.gold_image_answer == "Japan"
        assert next(i for i in level1 if i.question_id == "5").gold == "Changchun"
        assert {i.language for i in level1 + level2} == {"en"}

    def test_milestones_follow_the_expert_steps(self):
        level2 = {i.key: i for i in load_dataset(SAMPLE_DIR / "level2_en.jsonl")}
        # five image steps, then five text steps
        assert len(level2["L2-1"].milestones) == 10
        assert level2["L2-1"].milestones[-1].startswith("A text search found that the consumption tax rate")
        level1 = {i.key: i for i in load_dataset(SAMPLE_DIR / "level1_en.jsonl")}
        # numbered inline after a sentence, and in Chinese with full-width semicolons
        assert len(level1["L1-120"].milestones) == 2
        assert len(level1["L1-34"].milestones) == 3

    def test_two_photos_become_one_side_by_side_image(self):
        instance = next(i for i in load_dataset(SAMPLE_DIR / "level1_en.jsonl") if i.question_id == "120")
        assert len(instance.image_paths) == 2
        image = instance.contender_image()
        photo = Image.open(io.BytesIO(image.jpeg))
        singles = []
        for path in instance.image_paths:
            with Image.open(path) as single:
                singles.append(single.size)
        assert photo.format == "JPEG" and image.width > max(w * photo.height / h for w, h in singles)

    def test_fingerprint_changes_with_the_row(self, tmp_path):
        rows = [json.loads(line) for line in (SAMPLE_DIR / "level1_en.jsonl").read_text().splitlines()][:1]
        (tmp_path / "images").mkdir()
        (tmp_path / "images" / "level1-1.jpg").write_bytes((SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes())
        path = tmp_path / "d.jsonl"
        path.write_text(json.dumps(rows[0]) + "\n")
        before = load_dataset(path)[0].fingerprint
        rows[0]["gold_image_answer"] = "Korea"
        path.write_text(json.dumps(rows[0]) + "\n")
        assert load_dataset(path)[0].fingerprint != before


class TestBadFiles:
    def write(self, tmp_path, *lines: str):
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return path

    def test_missing_field_names_the_line(self, tmp_path):
        path = self.write(tmp_path, json.dumps({"question_id": 1, "prompt": "Where?", "image": "x.jpg"}))
        with pytest.raises(DatasetError, match=r"bad.jsonl:1: missing field 'gold_image_answer'"):
            load_dataset(path)

    def test_not_json(self, tmp_path):
        with pytest.raises(DatasetError, match=r":1: not JSON"):
            load_dataset(self.write(tmp_path, "{nope"))

    def test_an_image_outside_the_folder_is_refused(self, tmp_path):
        row = {"question_id": 1, "prompt": "Where?", "image": "../../etc/passwd", "gold_image_answer": "x"}
        with pytest.raises(DatasetError, match="outside the dataset's folder"):
            load_dataset(self.write(tmp_path, json.dumps(row)))

    def test_missing_image(self, tmp_path):
        row = {"question_id": 1, "prompt": "Where?", "image": "images/none.jpg", "gold_image_answer": "x"}
        with pytest.raises(DatasetError, match="not found next to the dataset"):
            load_dataset(self.write(tmp_path, json.dumps(row)))

    def test_a_repeated_question_is_refused(self, tmp_path):
        (tmp_path / "a.jpg").write_bytes((SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes())
        row = json.dumps({"question_id": 1, "prompt": "Where?", "image": "a.jpg", "gold_image_answer": "x"})
        with pytest.raises(DatasetError, match="L1-1 repeats line 1"):
            load_dataset(self.write(tmp_path, row, row))

    def test_empty_file(self, tmp_path):
        with pytest.raises(DatasetError, match="no instances"):
            load_dataset(self.write(tmp_path, ""))


class TestSplitSteps:
    @pytest.mark.parametrize(
        ("text", "steps"),
        [
            ("1. a\n2. b", ["a", "b"]),
            ("1. The place. Qingdao", ["The place. Qingdao"]),
            ("Intro.\n1. x\n2) y; 3. z", ["Intro.", "x", "y", "z"]),
            ("In 2019. 1. x", ["In 2019. 1. x"]),  # a lone "1." mid-text is not a list
            ("first line\nsecond line", ["first line", "second line"]),
            ("Built in 1947. 2. Then", ["Built in 1947. 2. Then"]),  # numbers must start at 1
            ("", []),
        ],
    )
    def test_steps(self, text, steps):
        assert split_steps(text) == steps
