"""Held-out evaluation of a gatekeeper, split by SOURCE, not by row.

A row-level split flatters a text classifier: near-copies of a test prompt
sit in its training data. Here every source file, a source in one language
(`chatterbot-corpus:food` in Turkish, `xgqa:dev` in Bengali,
`geoarena-authored:geo-climate` in Thai, ...), falls whole into one of
`FOLDS` folds (a stable hash of its name); the offline model is fitted on
the other folds and scores the prompts of the sources it never saw. The
same rows can be put to any other judge (`evaluate_judge`), e.g. the LLM.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from arena.gatekeeper.dataset import LabelledPrompt, dataset_hash

if TYPE_CHECKING:
    from arena.gatekeeper.encoder import StudentWeights
    from arena.gatekeeper.model import OfflineModel

FOLDS = 5


@dataclass
class Tally:
    n: int = 0
    correct: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0


class Miss(NamedTuple):
    row: LabelledPrompt
    score: float
    heads: dict[str, float] | None = None  # each head's logit, when the offline model's


@dataclass
class Report:
    """Accuracy overall, per language and per source, with every error."""

    overall: Tally = field(default_factory=Tally)
    languages: dict[str, Tally] = field(default_factory=dict)
    sources: dict[str, Tally] = field(default_factory=dict)
    not_geo: Tally = field(default_factory=Tally)  # correct = refused
    geo: Tally = field(default_factory=Tally)  # correct = accepted
    errors: list[Miss] = field(default_factory=list)

    def add(self, row: LabelledPrompt, score: float, threshold: float, heads: dict[str, float] | None = None) -> None:
        right = (score >= threshold) == row.geographic
        for tally in (
            self.overall,
            self.languages.setdefault(row.lang, Tally()),
            self.sources.setdefault(row.source, Tally()),
            self.geo if row.geographic else self.not_geo,
        ):
            tally.n += 1
            tally.correct += right
        if not right:
            self.errors.append(Miss(row, score, heads))

    @property
    def not_geo_accepted(self) -> float:
        return 1.0 - self.not_geo.accuracy if self.not_geo.n else 0.0

    def headline(self) -> str:
        """One line: accuracy, both error rates, and the languages against the 0.95 target."""
        languages = sorted(self.languages.items(), key=lambda item: item[1].accuracy)
        return (
            f"accuracy {self.overall.accuracy:.4f}, non-geographic accepted {self.not_geo_accepted:.3f}, "
            f"geographic refused {1 - self.geo.accuracy:.3f}, "
            f"languages at 0.95 or more {sum(t.accuracy >= 0.95 for _, t in languages)}/{len(languages)}; worst "
            + ", ".join(f"{lang} {t.accuracy:.3f}" for lang, t in languages[:5])
        )

    def lines(self, *, max_errors: int = 200) -> list[str]:
        summary = (
            f"overall accuracy {self.overall.accuracy:.4f} ({self.overall.correct}/{self.overall.n}); "
            f"non-geographic accepted {self.not_geo_accepted:.4f} ({self.not_geo.n - self.not_geo.correct}/"
            f"{self.not_geo.n}); geographic refused {1 - self.geo.accuracy:.4f} "
            f"({self.geo.n - self.geo.correct}/{self.geo.n})"
        )
        out = [summary, "per language:"]
        out += [f"  {lang}  {t.accuracy:.3f}  ({t.correct}/{t.n})" for lang, t in sorted(self.languages.items())]
        out.append("per source:")
        out += [f"  {src}  {t.accuracy:.3f}  ({t.correct}/{t.n})" for src, t in sorted(self.sources.items())]
        out.append(f"errors ({len(self.errors)}):")
        for row, score, heads in self.errors[:max_errors]:
            label = "geo" if row.geographic else "not-geo"
            logits = "".join(f" {name}={z:+.2f}" for name, z in (heads or {}).items())
            out.append(f"  [{row.lang} {row.source} {label} score={score:.3f}{logits}] {row.prompt[:160]!r}")
        if len(self.errors) > max_errors:
            out.append(f"  ... and {len(self.errors) - max_errors} more")
        return out


def fold_of(row: LabelledPrompt) -> int:
    source = row.source
    if source.startswith("geoarena-augmented:stuffing-"):  # built from that authored section's prompts
        source = "geoarena-authored:" + source.removeprefix("geoarena-augmented:stuffing-")
    key = f"{source}@{row.lang}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") % FOLDS


def evaluate_offline(
    rows: Sequence[LabelledPrompt],
    *,
    threshold: float = 0.5,
    c: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Leave-sources-out cross-validation of the offline model (fits FOLDS models: needs scikit-learn);
    each error is listed with its heads' logits, so it says which half of the policy was missed."""
    from arena.gatekeeper.model import probability

    report = Report()
    for row, heads in zip(rows, held_out_logits(rows, c=c, progress=progress), strict=True):
        report.add(row, probability(heads), threshold, heads)
    return report


def evaluate_with_encoder(
    rows: Sequence[LabelledPrompt],
    students: Path | None = None,
    *,
    threshold: float = 0.5,
    progress: Callable[[str], None] | None = None,
) -> tuple[Report, int]:
    """The offline model with the encoder's second opinion (encoder.py), held out the same way:
    each fold's student is fine-tuned on the other folds (encoder_fitting.py, 15-25 minutes a
    fold on two cores), or read from `students` (a folder) when it holds one fine-tuned on those
    very prompts, and kept there. Returns the report and how many prompts the encoder was asked about."""
    import numpy as np

    from arena.gatekeeper.cascade import asks, combine
    from arena.gatekeeper.encoder import Encoder
    from arena.gatekeeper.encoder_fitting import fit_student
    from arena.gatekeeper.model import sigmoid, verdict_logit

    offline = np.array([verdict_logit(heads) for heads in held_out_logits(rows, progress=progress)])
    asked = asks(offline, np.array([len(r.prompt) for r in rows]))
    encoder = np.zeros(len(rows))
    folds = np.array([fold_of(r) for r in rows])
    for fold in range(FOLDS):
        train = [r for r, f in zip(rows, folds, strict=True) if f != fold]
        kept = students / f"fold{fold}.npz" if students is not None else None
        weights = kept_student(kept, train) if kept is not None else None
        if weights is None:
            if progress is not None:
                progress(f"fold {fold}: fine-tuning the student on {len(train):,} prompts")
            weights = fit_student(train, progress=progress)
            if kept is not None:
                kept.parent.mkdir(parents=True, exist_ok=True)
                weights.save(kept)
        test = np.flatnonzero((folds == fold) & asked)  # the others' verdict is the offline model's
        encoder[test] = Encoder(weights).logits([rows[int(i)].prompt for i in test])
    z = np.where(asked, combine(offline, encoder), offline)
    report = Report()
    for row, logit in zip(rows, z, strict=True):
        report.add(row, sigmoid(float(logit)), threshold)
    return report, int(asked.sum())


def kept_student(path: Path, train: Sequence[LabelledPrompt]) -> StudentWeights | None:
    """The student kept at `path` when it was fine-tuned on `train` by today's recipe (as many
    layers and pieces), else None."""
    from arena.gatekeeper.encoder import LAYERS, MAX_PIECES, StudentWeights

    if not path.exists():
        return None
    weights = StudentWeights.load(path)
    if (weights.dataset_sha256, weights.layers, weights.pieces) != (dataset_hash(train), LAYERS, MAX_PIECES):
        return None
    return weights


def held_out_scores(
    rows: Sequence[LabelledPrompt], *, c: float | None = None, progress: Callable[[str], None] | None = None
) -> list[float]:
    """Each row's score by the offline model fitted on the folds without it."""
    from arena.gatekeeper.model import probability

    return [probability(heads) for heads in held_out_logits(rows, c=c, progress=progress)]


def held_out_logits(
    rows: Sequence[LabelledPrompt], *, c: float | None = None, progress: Callable[[str], None] | None = None
) -> list[dict[str, float]]:
    """Each row's heads' logits by the offline model fitted on the folds without it."""
    logits: list[dict[str, float]] = [{} for _ in rows]
    for test, model in fold_models(rows, c=c, progress=progress):
        for i in test:
            logits[i] = model.logits(rows[i].prompt)
    return logits


def fold_models(
    rows: Sequence[LabelledPrompt], *, c: float | None = None, progress: Callable[[str], None] | None = None
) -> Iterator[tuple[list[int], OfflineModel]]:
    """Each fold's rows (their indices) with the offline model fitted on the other folds,
    made one at a time as they are asked for.

    The shipped pieces (pieces.py) were made from every prompt, the held-out ones too; each
    fold's model keeps only those of the tables' words and of its training prompts, so a
    held-out prompt is cut into the pieces it would find as a prompt the arena never saw."""
    from arena.gatekeeper.fitting import DEFAULT_C, fit_model
    from arena.gatekeeper.keywords import Keywords, table_words
    from arena.gatekeeper.pieces import PieceVectors
    from arena.gatekeeper.places import PlaceNames

    keywords, pieces, places = Keywords.read_tsv(), PieceVectors.read(), PlaceNames.collect()
    of_tables = pieces.seen_in(table_words())
    folds = [fold_of(r) for r in rows]
    for fold in range(FOLDS):
        train = [r for r, f in zip(rows, folds, strict=True) if f != fold]
        test = [i for i, f in enumerate(folds) if f == fold]
        if not test:
            continue
        if progress:
            progress(f"fold {fold + 1}/{FOLDS}: fitting on {len(train)}, scoring {len(test)} unseen")
        known = pieces.subset(of_tables | pieces.seen_in(r.prompt for r in train))
        yield test, fit_model(train, keywords, known, places, c=DEFAULT_C if c is None else c)


async def evaluate_judge(rows: Sequence[LabelledPrompt], judge: Callable[[str], Awaitable[bool]]) -> Report:
    """The same report for any judge that answers geographic or not (the LLM judge, say)."""
    report = Report()
    for row in rows:
        report.add(row, 1.0 if await judge(row.prompt) else 0.0, 0.5)
    return report


def evaluate_model(rows: Sequence[LabelledPrompt], score: Callable[[str], float], *, threshold: float = 0.5) -> Report:
    """The report of a fitted model on rows it was not fitted on (probe sets)."""
    return evaluate_model_scores(rows, [score(row.prompt) for row in rows], threshold=threshold)


def evaluate_model_scores(rows: Sequence[LabelledPrompt], scores: Sequence[float], *, threshold: float = 0.5) -> Report:
    report = Report()
    for row, score in zip(rows, scores, strict=True):
        report.add(row, score, threshold)
    return report
