"""GeoBrowse-format datasets: one JSON object per line.

Fields as in the public benchmark (github.com/ornamentt/GeoBrowse, MIT):
`question_id, prompt, image` (a path or a list of paths, relative to the
file), `gold_image_answer, image_solution, source`; Level 2 rows add
`gold_text_answer, text_solution, image_source`. A row with a
`gold_text_answer` is Level 2, else Level 1. A bad row is reported with its
line number and nothing is loaded.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image

from arena.contenders.base import ContenderImage
from arena.geo.language import guess_language
from arena.images.intake import IntakeError, IntakeLimits, normalise

MAX_IMAGES_PER_INSTANCE = 6
DEFAULT_LIMITS = IntakeLimits()
# Expert solutions number their steps "1." / "2)" / "Step 3:" at a line start.
_STEP = re.compile(r"(?:^|(?<=[\n;；。.!?]))\s*(?:step\s*)?(\d{1,2})\s*[.):：、](?!\d)\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Instance:
    """One benchmark question about one photo (or a few)."""

    key: str  # "L1-5": level and question id, unique within a suite
    level: int
    question_id: str
    prompt: str
    image_paths: tuple[Path, ...]
    gold_image_answer: str
    gold_text_answer: str | None
    image_solution: str
    text_solution: str
    language: str
    line: int
    fingerprint: str = ""  # changes when the row or its photos change: a rerun redoes the instance

    @property
    def gold(self) -> str:
        """What the answer is graded against: Level 2 grades the text answer."""
        if self.level == 2 and self.gold_text_answer is not None:
            return self.gold_text_answer
        return self.gold_image_answer

    @property
    def milestones(self) -> list[str]:
        """The expert solution's steps, image part first (Level 2: then the text part)."""
        steps = split_steps(self.image_solution)
        if self.level == 2:
            steps += split_steps(self.text_solution)
        return steps

    def contender_image(self, limits: IntakeLimits = DEFAULT_LIMITS) -> ContenderImage:
        """The photo as contenders see it. Several photos are set side by side
        in one image: the contender protocol carries one photo per question."""
        datas = [p.read_bytes() for p in self.image_paths]
        try:
            if len(datas) == 1:
                clean = normalise(datas[0], limits)
            else:
                clean = normalise(side_by_side(datas, limits), limits)
        except IntakeError as exc:
            raise DatasetError(f"instance {self.key}: {exc.message}") from None
        return ContenderImage(jpeg=clean.jpeg, width=clean.width, height=clean.height, sha256=clean.sha256)


class DatasetError(ValueError):
    """A dataset file we cannot use, with the reason and the line."""


def load_dataset(path: Path) -> list[Instance]:
    """Every instance of a GeoBrowse-format JSONL file, in file order."""
    if not path.is_file():
        raise DatasetError(f"{path}: no such dataset file")
    instances: list[Instance] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DatasetError(f"{path}:{number}: not JSON ({exc})") from None
            instance = _instance(row, path.parent, number, path)
            if instance.key in seen:
                raise DatasetError(f"{path}:{number}: {instance.key} repeats line {seen[instance.key]}")
            seen[instance.key] = number
            instances.append(instance)
    if not instances:
        raise DatasetError(f"{path}: no instances in the file")
    return instances


def split_steps(solution: str) -> list[str]:
    """`"1. a\\n2. b"` -> `["a", "b"]`. Steps are numbered 1, 2, 3... at a line
    start or after a sentence ends (experts write both); an unnumbered
    solution is one step per non-empty line."""
    text = (solution or "").strip()
    if not text:
        return []
    cuts: list[tuple[int, int]] = []  # (start of the number, start of the step's text)
    for mark in _STEP.finditer(text):
        if int(mark.group(1)) == len(cuts) + 1:
            cuts.append((mark.start(1), mark.end()))
    if len(cuts) >= 2 or (cuts and cuts[0][0] == 0):
        pieces = [
            text[begin : (cuts[i + 1][0] if i + 1 < len(cuts) else len(text))] for i, (_, begin) in enumerate(cuts)
        ]
        if text[: cuts[0][0]].strip():
            pieces.insert(0, text[: cuts[0][0]])
    else:
        pieces = text.splitlines()
    steps = [" ".join(p.split()).strip(" ;；") for p in pieces]
    return [s for s in steps if s]


def side_by_side(datas: Sequence[bytes], limits: IntakeLimits) -> bytes:
    """Photos scaled to one height and joined left to right, as one JPEG."""
    photos = []
    for data in datas:
        photos.append(Image.open(io.BytesIO(normalise(data, limits).jpeg)).convert("RGB"))
    height = min(p.height for p in photos)
    scaled = [p.resize((max(1, round(p.width * height / p.height)), height)) for p in photos]
    gap = 8
    sheet = Image.new("RGB", (sum(p.width for p in scaled) + gap * (len(scaled) - 1), height), "white")
    x = 0
    for photo in scaled:
        sheet.paste(photo, (x, 0))
        x += photo.width + gap
    out = io.BytesIO()
    sheet.save(out, "JPEG", quality=90)
    return out.getvalue()


# -- one row ---------------------------------------------------------------------


def _instance(row: object, folder: Path, number: int, path: Path) -> Instance:
    where = f"{path}:{number}"
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: a row must be a JSON object")
    for name in ("question_id", "prompt", "image", "gold_image_answer"):
        if row.get(name) in (None, "", []):
            raise DatasetError(f"{where}: missing field {name!r}")
    prompt = row["prompt"]
    if not isinstance(prompt, str):
        raise DatasetError(f"{where}: 'prompt' must be text")
    images = row["image"] if isinstance(row["image"], list) else [row["image"]]
    if not all(isinstance(i, str) for i in images) or len(images) > MAX_IMAGES_PER_INSTANCE:
        raise DatasetError(f"{where}: 'image' must be a path or a list of at most {MAX_IMAGES_PER_INSTANCE} paths")
    paths = []
    for name in images:
        image_path = (folder / name).resolve()
        if not image_path.is_relative_to(folder.resolve()):
            raise DatasetError(f"{where}: image {name!r} lies outside the dataset's folder")
        if not image_path.is_file():
            raise DatasetError(f"{where}: image {name!r} not found next to the dataset")
        paths.append(image_path)
    gold_text = row.get("gold_text_answer")
    level = 2 if gold_text not in (None, "") else 1
    question_id = str(row["question_id"])
    instance = Instance(
        key=f"L{level}-{question_id}",
        level=level,
        question_id=question_id,
        prompt=prompt.strip(),
        image_paths=tuple(paths),
        gold_image_answer=str(row["gold_image_answer"]).strip(),
        gold_text_answer=str(gold_text).strip() if level == 2 else None,
        image_solution=str(row.get("image_solution") or ""),
        text_solution=str(row.get("text_solution") or ""),
        language=guess_language(prompt),
        line=number,
    )
    return replace(instance, fingerprint=_fingerprint(instance))


def _fingerprint(instance: Instance) -> str:
    digest = hashlib.sha256()
    row = [
        instance.level,
        instance.question_id,
        instance.prompt,
        instance.gold_image_answer,
        instance.gold_text_answer,
        instance.image_solution,
        instance.text_solution,
    ]
    digest.update(json.dumps(row, ensure_ascii=False).encode())
    for path in instance.image_paths:
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
