"""The labelled prompts the offline gatekeeper learns from: `data/prompts/<lang>.jsonl`,
one `{prompt, geographic, lang, source}` a line, with `group` when the prompt is one of a set
of translations and `form` when it was composed in one of the forms of `forms.py` (sources and
licences in `data/README.md`). `data/unseen/` holds the hand-written evaluation prompts that no
fit and no tuning ever reads (`load_unseen`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
UNSEEN_DIR = DATA_DIR / "unseen"  # evaluation only: never a training row


@dataclass(frozen=True)
class LabelledPrompt:
    prompt: str
    geographic: bool
    lang: str
    source: str  # "<dataset>:<part>", the unit a held-out evaluation leaves out whole
    group: str = ""  # shared by the translations of one prompt (alignment.py), else empty
    form: str = ""  # the form it was composed in (forms.FORMS), or as `form_of` reads its source

    @property
    def family(self) -> str:
        return self.source.split(":", 1)[0]


@cache
def load_unseen() -> tuple[LabelledPrompt, ...]:
    """The hand-written evaluation prompts, one per form and language file: never trained on."""
    return load_prompts(UNSEEN_DIR)


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
                        str(row.get("form", "")),
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
