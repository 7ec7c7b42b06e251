"""Can a plain text classifier tell the contenders apart from what voters see?

Huang et al. (ICML 2025) identified Chatbot Arena's models from their answers
with >95% accuracy and used that to steer votes. This audit runs the same
kind of attack on our own stored answers: TF-IDF (word 1-2 grams and
character 2-4 grams) + logistic regression, cross-validated (stratified
k-fold), predicting the contender from the final answer, and separately from
what voters see of a GATE trajectory before the vote (tool names, arguments,
thoughts and observations). Per contender it reports how often its answers
are recognised against chance (1 / number of contenders) and warns when an
attacker would be right much more often than guessing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena.db.tables import Response

MIN_PER_CONTENDER = 5  # fewer answers than this: too few to cross-validate
DEFAULT_FOLDS = 5
DEFAULT_LIMIT = 5000  # newest answers read; enough for a stable figure, quick in the rating job


@dataclass(frozen=True)
class Sample:
    contender: str
    answer: str
    trajectory: str  # what a voter saw of the GATE steps; "" for a plain contender


def samples_from_database(session: Session, limit: int = DEFAULT_LIMIT) -> list[Sample]:
    """The newest finished answers, with what voters saw of their trajectories."""
    rows = session.execute(
        select(Response.contender, Response.text, Response.trajectory)
        .where(Response.status == "done")
        .order_by(Response.id.desc())
        .limit(limit)
    )
    return [Sample(c, t or "", visible_trajectory(traj or [])) for c, t, traj in rows]


def visible_trajectory(steps: Iterable[Any]) -> str:
    """The parts of each step the page shows before the vote."""
    parts = []
    for step in steps:
        if not isinstance(step, dict):
            continue
        parts.append(str(step.get("tool", "")))
        parts.append(json.dumps(step.get("args", {}), ensure_ascii=False, sort_keys=True))
        parts.append(str(step.get("thought", "") or ""))
        parts.append(str(step.get("observation", "") or "")[:2000])
    return "\n".join(p for p in parts if p)


def audit(
    samples: Sequence[Sample], *, folds: int = DEFAULT_FOLDS, warn_above: float | None = None, seed: int = 0
) -> dict[str, Any]:
    """Cross-validated identification accuracy on answers, and on trajectories."""
    report: dict[str, Any] = {
        "method": f"TF-IDF (word 1-2 + char 2-4 grams) + logistic regression, {folds}-fold stratified CV",
        "answers": _identify([(s.contender, s.answer) for s in samples if s.answer.strip()], folds, warn_above, seed),
        "trajectories": _identify(
            [(s.contender, s.trajectory) for s in samples if s.trajectory.strip()], folds, warn_above, seed
        ),
    }
    report["warnings"] = [
        f"{view}: {row['contender']} is recognised in {row['accuracy']:.0%} of its answers "
        f"(chance {section['chance']:.0%})"
        for view in ("answers", "trajectories")
        if (section := report[view]) is not None
        for row in section["contenders"]
        if row["warning"]
    ]
    return report


def _identify(
    labelled: list[tuple[str, str]], folds: int, warn_above: float | None, seed: int
) -> dict[str, Any] | None:
    counts = Counter(c for c, _ in labelled)
    kept = [(c, t) for c, t in labelled if counts[c] >= MIN_PER_CONTENDER]
    names = sorted({c for c, _ in kept})
    if len(names) < 2:
        return None
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import FeatureUnion

    y = np.array([c for c, _ in kept])
    k = max(2, min(folds, min(Counter(y).values())))
    features = FeatureUnion(
        [
            ("words", TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True, max_features=50_000)),
            ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, max_features=50_000)),
        ]
    )
    # The n-grams are counted once for all folds, not once a fold: they see no labels, so a
    # held-out answer teaches the classifier nothing; counting 2,000 answers of 1,800
    # characters each took about 3.7 s, and did so six times.
    x = features.fit_transform([t for _, t in kept])
    model = LogisticRegression(max_iter=2000, C=10.0)
    predicted = cross_val_predict(model, x, y, cv=StratifiedKFold(k, shuffle=True, random_state=seed))
    chance = 1.0 / len(names)
    threshold = warn_above if warn_above is not None else chance + (1 - chance) / 2
    rows = []
    for name in names:
        mine = y == name
        accuracy = float((predicted[mine] == name).mean())
        rows.append(
            {
                "contender": name,
                "answers": int(mine.sum()),
                "accuracy": round(accuracy, 4),
                "chance": round(chance, 4),
                "warning": accuracy > threshold,
            }
        )
    return {
        "samples": len(kept),
        "contenders": rows,
        "accuracy": round(float((predicted == y).mean()), 4),
        "chance": round(chance, 4),
        "warn_above": round(threshold, 4),
        "folds": k,
        "left_out": sorted(c for c in counts if counts[c] < MIN_PER_CONTENDER),
    }


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """The figure the snapshot keeps for the admin: overall and worst accuracy per view."""
    out: dict[str, Any] = {"method": report["method"], "warnings": report["warnings"]}
    for view in ("answers", "trajectories"):
        section = report[view]
        out[view] = (
            None
            if section is None
            else {
                "accuracy": section["accuracy"],
                "chance": section["chance"],
                "samples": section["samples"],
                "worst": max(section["contenders"], key=lambda r: r["accuracy"]),
            }
        )
    return out
