"""The labelled prompts the offline gatekeeper learns from: `data/prompts/<lang>.jsonl`,
one `{prompt, geographic, lang, source}` a line, with `group` when the prompt is one of a set
of translations (sources and licences in `data/README.md`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class LabelledPrompt:
    prompt: str
    geographic: bool
    lang: str
    source: str  # "<dataset>:<part>", the unit a held-out evaluation leaves out whole
    group: str = ""  # shared by the translations of one prompt (alignment.py), else empty

    @property
    def family(self) -> str:
        return self.source.split(":", 1)[0]


@cache
def load_dataset() -> tuple[LabelledPrompt, ...]:
    """Every shipped labelled prompt, in a stable order."""
    return load_prompts(DATA_DIR / "prompts")


def load_prompts(folder: Path) -> tuple[LabelledPrompt, ...]:
    """The labelled prompts of every `*.jsonl` file in `folder`."""
    rows: list[LabelledPrompt] = []
    for path in sorted(folder.glob("*.jsonl")):
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows.append(
                    LabelledPrompt(
                        str(row["prompt"]),
                        bool(row["geographic"]),
                        str(row["lang"]),
                        str(row["source"]),
                        str(row.get("group", "")),
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path.name}:{number}: not a labelled prompt ({exc})") from None
    return tuple(rows)


def dataset_hash(rows: Sequence[LabelledPrompt]) -> str:
    h = hashlib.sha256()
    for row in rows:
        group = f"\t{row.group}" if row.group else ""
        h.update(f"{row.lang}\t{int(row.geographic)}\t{row.source}{group}\t{row.prompt}\n".encode())
    return h.hexdigest()
