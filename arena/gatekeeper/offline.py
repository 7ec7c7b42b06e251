"""The offline gatekeeper: character n-gram TF-IDF plus language-free concept
tokens (`lexicon.py`), then logistic regression, trained at first use from
the labelled prompts shipped in `data/`.

Character n-grams need no tokeniser, so Chinese, Japanese, Korean, Arabic and
Russian work like English; the concept tokens let what is learnt in one
language help the others. Every prompt has a fixed side of the train /
held-out split, chosen by a stable hash of its text, so the held-out figures
mean the same thing on every machine and a prompt never moves between sides
when others are added. Nothing is pickled: training takes about a second.

The same features also feed a small language identifier, so a refusal can
be worded in the asker's language.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from arena.gatekeeper.lexicon import concept_tokens

HELD_OUT_EVERY = 5  # one prompt in five is held out
LANGUAGES = ("en", "zh", "ja", "ko", "es", "fr", "de", "ru", "ar", "pt")


@dataclass(frozen=True)
class LabelledPrompt:
    prompt: str
    geographic: bool
    lang: str

    @property
    def held_out(self) -> bool:
        return held_out(self.prompt)


def held_out(prompt: str) -> bool:
    """The prompt's fixed side of the split (a stable hash, not Python's `hash`)."""
    digest = hashlib.sha256(_normalise(prompt).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % HELD_OUT_EVERY == 0


@cache
def load_dataset() -> tuple[LabelledPrompt, ...]:
    """Every labelled prompt shipped in `arena/gatekeeper/data/*.jsonl`."""
    rows: list[LabelledPrompt] = []
    folder = resources.files("arena.gatekeeper") / "data"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".jsonl"):
            continue
        for number, line in enumerate(entry.read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows.append(LabelledPrompt(str(row["prompt"]), bool(row["geographic"]), str(row["lang"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{entry.name}:{number}: not a labelled prompt ({exc})") from None
    return tuple(rows)


def dataset_hash(rows: Sequence[LabelledPrompt]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(f"{row.lang}\t{int(row.geographic)}\t{row.prompt}\n".encode())
    return h.hexdigest()


class OfflineClassifier:
    """Fitted on the training side of the split; `score` is P(geographic)."""

    def __init__(self, rows: Sequence[LabelledPrompt], *, c: float = 30.0) -> None:
        texts = [_normalise(r.prompt) for r in rows]
        self.chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), sublinear_tf=True)
        self.concepts = CountVectorizer(analyzer=str.split, binary=True)
        x = sp.hstack([self.chars.fit_transform(texts), self.concepts.fit_transform(map(_concepts, texts))]).tocsr()
        self.model = LogisticRegression(C=c, solver="liblinear")
        self.model.fit(x, np.array([r.geographic for r in rows], dtype=int))
        # Only the argmax is needed for the language, and a linear SVM is fast.
        self.languages = LinearSVC(C=1.0)
        self.languages.fit(x, [r.lang for r in rows])
        self.trained_on = len(rows)

    def scores(self, prompts: Iterable[str]) -> list[float]:
        return [float(p) for p in self.model.predict_proba(self._features(prompts))[:, 1]]

    def score(self, prompt: str) -> float:
        return self.scores([prompt])[0]

    def language(self, prompt: str) -> str:
        return str(self.languages.predict(self._features([prompt]))[0])

    def _features(self, prompts: Iterable[str]) -> sp.csr_matrix:
        texts = [_normalise(p) for p in prompts]
        return sp.hstack([self.chars.transform(texts), self.concepts.transform(map(_concepts, texts))]).tocsr()


_lock = threading.Lock()
_fitted: dict[str, OfflineClassifier] = {}


def shared_classifier() -> OfflineClassifier:
    """The classifier trained on the shipped training split, fitted once per
    process (keyed by the dataset's hash) and shared by every request."""
    rows = load_dataset()
    key = dataset_hash(rows)
    with _lock:  # two first requests must not both train
        if key not in _fitted:
            _fitted[key] = OfflineClassifier([r for r in rows if not r.held_out])
        return _fitted[key]


def held_out_accuracy(classifier: OfflineClassifier, threshold: float = 0.5) -> dict[str, dict[str, Any]]:
    """Per language: held-out prompts, correct answers, accuracy and the misses."""
    report: dict[str, dict[str, Any]] = {}
    rows = [r for r in load_dataset() if r.held_out]
    scores = classifier.scores(r.prompt for r in rows)
    for row, score in zip(rows, scores, strict=True):
        entry = report.setdefault(row.lang, {"n": 0, "correct": 0, "misses": []})
        entry["n"] += 1
        if (score >= threshold) == row.geographic:
            entry["correct"] += 1
        else:
            entry["misses"].append((row.prompt, row.geographic, round(score, 3)))
    for entry in report.values():
        entry["accuracy"] = entry["correct"] / entry["n"]
    return report


def _concepts(text: str) -> str:
    return " ".join(concept_tokens(text)) or "no_concept"


def _normalise(prompt: str) -> str:
    return " ".join(prompt.lower().split())
