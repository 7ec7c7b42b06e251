"""Held-out evaluation of the gatekeeper: by SOURCE, by FORM, and on the unseen set.

A row-level split flatters a text classifier: near-copies of a test prompt
sit in its training data. So rows are held out whole:

* by source: every source in one language (`chatterbot-corpus:food` in
  Turkish, `geoarena-forms:choice-place` in Thai) falls into one of `FOLDS`
  folds (a stable hash of its name); a model fitted on the other folds
  scores it;
* by form: each form of `forms.FORMS` (multiple choice, chains, clues, ...)
  is held out whole, in every language and with both labels, so the model
  scores a form it never saw;
* unseen: `data/unseen/`, prompts written by hand for evaluation only, which
  no fit and no tuning reads, scored by the shipped model.

Scores are read at the served operating point (`Gatekeeper.decide`): a
prompt *runs* when it is taken or unsure, and is *taken* outright from
`sure`. Every figure is per language as well.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from arena.gatekeeper.gatekeeper import SURE, THRESHOLD
from arena.gatekeeper.keywords import Keywords
from arena.gatekeeper.model import OfflineModel, probability
from arena.gatekeeper.places import PlaceNames
from gatekeeper_build.corpus import LabelledPrompt
from gatekeeper_build.forms import FORMS
from gatekeeper_build.vectors import PieceVectors

FOLDS = 5
# The form of a row that was not composed in one (`form_of`): the authored sections that are forms
_SECTION_FORMS = {"geo-multihop": "chain", "geo-clues": "clue"}


def form_of(row: LabelledPrompt) -> str:
    """The row's form: its own, or its authored section's when that is one of FORMS; else "other"."""
    if row.form:
        return row.form
    return _SECTION_FORMS.get(row.source.removeprefix("geoarena-authored:"), "other")


@dataclass
class Tally:
    n: int = 0
    runs: int = 0  # taken or unsure: the battle starts
    taken: int = 0  # taken outright

    def add(self, score: float, threshold: float, sure: float) -> None:
        self.n += 1
        self.runs += score >= threshold
        self.taken += score >= sure

    def share(self) -> float:
        return self.runs / self.n if self.n else 0.0


class Miss(NamedTuple):
    row: LabelledPrompt
    score: float


@dataclass
class Report:
    """Per label, language and form: how many prompts run and are taken; every error."""

    threshold: float = THRESHOLD
    sure: float = SURE
    cells: dict[tuple[bool, str, str], Tally] = field(default_factory=dict)  # (label, form, lang)
    errors: list[Miss] = field(default_factory=list)
    scored: list[Miss] = field(default_factory=list)  # every row with its score, for `--scores`

    def add(self, row: LabelledPrompt, score: float) -> None:
        self.scored.append(Miss(row, score))
        self.cells.setdefault((row.geographic, form_of(row), row.lang), Tally()).add(score, self.threshold, self.sure)
        if (score >= self.threshold) != row.geographic:
            self.errors.append(Miss(row, score))

    def total(self, geographic: bool, form: str | None = None, lang: str | None = None) -> Tally:
        out = Tally()
        for (label, f, lg), t in self.cells.items():
            if label == geographic and form in (None, f) and lang in (None, lg):
                out.n, out.runs, out.taken = out.n + t.n, out.runs + t.runs, out.taken + t.taken
        return out

    def lines(self, *, max_errors: int = 200) -> list[str]:
        geo, other = self.total(True), self.total(False)
        out = [
            f"operating point: refused under {self.threshold}, taken from {self.sure}, unsure between (runs, tagged)",
            f"geographic run {_pct(geo)} (taken outright {geo.taken}/{geo.n}); "
            f"not geographic run {_pct(other)} (taken outright {other.taken}/{other.n})",
        ]
        for geographic, title in ((True, "geographic prompts that run"), (False, "non-geographic prompts that run")):
            forms = sorted({f for (label, f, _) in self.cells if label == geographic})
            out.append(f"{title}, by form:")
            for form in forms:
                t = self.total(geographic, form)
                per = " ".join(
                    f"{lang} {self.total(geographic, form, lang).share():.2f}"
                    for lang in sorted({lg for (label, f, lg) in self.cells if label == geographic and f == form})
                )
                out.append(f"  {form:<12} {_pct(t)}   {per}")
        out.append(f"errors ({len(self.errors)}):")
        for row, score in self.errors[:max_errors]:
            label = "geo" if row.geographic else "not-geo"
            out.append(f"  [{row.lang} {form_of(row)} {row.source} {label} score={score:.3f}] {row.prompt[:160]!r}")
        if len(self.errors) > max_errors:
            out.append(f"  ... and {len(self.errors) - max_errors} more")
        return out


def _pct(t: Tally) -> str:
    return f"{t.share():.4f} ({t.runs}/{t.n})"


def fold_of(row: LabelledPrompt) -> int:
    """The source fold of a row (a source in one language, hashed)."""
    source = row.source
    if source.startswith("geoarena-augmented:stuffing-"):  # built from that authored section's prompts
        source = "geoarena-authored:" + source.removeprefix("geoarena-augmented:stuffing-")
    key = f"{source}@{row.lang}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") % FOLDS


def by_source(rows: Sequence[LabelledPrompt], progress: Callable[[str], None] | None = None) -> Report:
    """Every row scored by a model fitted without its source fold."""
    return _held_out(rows, [fold_of(r) for r in rows], progress)


def by_form(rows: Sequence[LabelledPrompt], progress: Callable[[str], None] | None = None) -> Report:
    """Every row of a form of FORMS scored by a model fitted without any row of that form."""
    forms = [form_of(r) for r in rows]
    return _held_out(rows, [FORMS.index(f) if f in FORMS else None for f in forms], progress)


def on_unseen(model: OfflineModel, rows: Sequence[LabelledPrompt]) -> Report:
    """The hand-written evaluation prompts scored by a fitted model (the shipped one)."""
    report = Report()
    for row in rows:
        report.add(row, model.score(row.prompt))
    return report


async def with_judge(rows: Sequence[LabelledPrompt], judge: Callable[[str], Awaitable[bool]]) -> Report:
    """The same report for any judge that answers geographic or not (the LLM judge, say)."""
    report = Report(threshold=0.5, sure=0.5)
    for row in rows:
        report.add(row, 1.0 if await judge(row.prompt) else 0.0)
    return report


def _held_out(
    rows: Sequence[LabelledPrompt], folds: list[int | None], progress: Callable[[str], None] | None
) -> Report:
    report = Report()
    for test, model in fold_models(rows, folds, progress):
        for i in test:
            report.add(rows[i], probability(model.logits(rows[i].prompt)))
    return report


def fold_models(
    rows: Sequence[LabelledPrompt], folds: list[int | None], progress: Callable[[str], None] | None = None
) -> Iterator[tuple[list[int], OfflineModel]]:
    """Each fold's rows (their indices) with the model fitted on the rows of the other folds (a
    row whose fold is None is always trained on), made one at a time as they are asked for.

    The stored piece vectors were made from every prompt, the held-out ones too; each fold's
    model keeps only those of the tables' words and of its training prompts, so a held-out
    prompt is cut into the pieces it would find as a prompt the arena never saw."""
    from gatekeeper_build.fitting import DEFAULT_C, fit_model

    keywords, pieces, places, of_tables = _tables()
    with tempfile.TemporaryDirectory() as scratch:
        names = sorted({f for f in folds if f is not None})
        for number, fold in enumerate(names, 1):
            train = [r for r, f in zip(rows, folds, strict=True) if f != fold]
            test = [i for i, f in enumerate(folds) if f == fold]
            if progress:
                progress(f"fold {number}/{len(names)}: fitting on {len(train)}, scoring {len(test)} unseen")
            known = pieces.subset(of_tables | pieces.seen_in((r.prompt for r in train), Path(scratch) / "all.model"))
            model = fit_model(train, keywords, known, places, c=DEFAULT_C, pieces_model=Path(scratch) / "fold.model")
            yield test, model


@cache
def _tables() -> tuple[Keywords, PieceVectors, PlaceNames, np.ndarray]:
    """What every fold's fit shares, read once a process (the gazetteer alone takes seconds):
    the concept tables, the piece vectors, the place names, and which pieces the tables' words use."""
    from gatekeeper_build.tables import collect_places, read_keywords, table_words

    pieces = PieceVectors.read()
    with tempfile.TemporaryDirectory() as scratch:
        of_tables = pieces.seen_in(table_words(), Path(scratch) / "all.model")
    return read_keywords(), pieces, collect_places(), of_tables
