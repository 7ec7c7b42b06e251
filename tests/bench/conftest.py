"""Fixtures of the evaluation tests: the loopback judge server and small
GeoBrowse-format datasets made of the shared sample's real photos."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_DIR
from tests.servers import serve_in_thread
from tests.servers.judge_models import JudgeModels


@pytest.fixture(scope="session")
def judge_server() -> Iterator[tuple[str, JudgeModels]]:
    """(base URL ending in /v1, server) of the loopback judge models."""
    server = JudgeModels()
    with serve_in_thread(server.app) as url:
        yield f"{url}/v1", server


def write_dataset(folder: Path, rows: list[dict[str, object]], name: str = "mini.jsonl") -> Path:
    """A dataset file beside copies of the sample photos it names."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for row in rows:
        images = row["image"] if isinstance(row["image"], list) else [row["image"]]
        for image in images:
            shutil.copy(SAMPLE_DIR / str(image), folder / str(image))
    path = folder / name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


PARIS_ROWS: list[dict[str, object]] = [
    # the loopback "echo" contenders answer "Best guess: **Paris, France**"
    {
        "question_id": 1,
        "prompt": "Where was this photo taken?",
        "image": "images/level1-1.jpg",
        "gold_image_answer": "Paris",
        "image_solution": "1. Read the street signs.\n2. Match the architecture.",
        "source": "test",
    },
    {
        "question_id": 2,
        "prompt": "Which country is this?",
        "image": "images/level1-2.jpg",
        "gold_image_answer": "Japan",
        "image_solution": "1. Spot the kanji.\n2. Left-hand traffic.",
        "source": "test",
    },
    {
        "question_id": 3,
        "prompt": "Which city is this? A famous tower stands there; how tall is it in metres?",
        "image": ["images/level1-120-0.jpg", "images/level1-120-1.jpg"],
        "gold_image_answer": "Paris",
        "gold_text_answer": "330",
        "image_solution": "1. Find the evidence.",
        "text_solution": "1. The tower is 330 metres tall.",
        "source": "test",
        "image_source": "test",
    },
]
