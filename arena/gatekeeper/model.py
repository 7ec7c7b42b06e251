"""The fitted offline gatekeeper: a weight per hashed n-gram, a weight per
encoder piece (pieces.py) and a bias, read from `data/model.npz` (numpy
arrays only, `allow_pickle=False`: loading it runs no code), with the concept
tables (keywords.py) and the pieces' vocabulary it was fitted with.
`python -m arena.gatekeeper.build fit` makes the file.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arena.gatekeeper.alignment import Alignment
from arena.gatekeeper.dataset import DATA_DIR
from arena.gatekeeper.features import DIMENSIONS, feature_indices
from arena.gatekeeper.keywords import Keywords
from arena.gatekeeper.pieces import Tokeniser, unpack

MODEL_PATH = DATA_DIR / "model.npz"


@dataclass(frozen=True)
class OfflineModel:
    weights: np.ndarray  # float32, one per feature bucket
    bias: float
    dataset_sha256: str  # of the prompts it was fitted on
    trained_on: int
    alignment: Alignment  # token -> cross-lingual concept, induced with the weights
    keywords: Keywords | None  # CLDR's keyword -> emoji concepts, or None for a model fitted without
    tokeniser: Tokeniser | None = None  # the encoder's pieces, or None for a model fitted without
    piece_weights: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))  # one per piece

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> OfflineModel:
        with np.load(path, allow_pickle=False) as npz:
            weights = np.ascontiguousarray(npz["weights"], dtype=np.float32)
            if weights.shape != (DIMENSIONS,):
                raise ValueError(f"{path}: {weights.shape[0]} weights, the features need {DIMENSIONS}")
            alignment = Alignment(
                np.ascontiguousarray(npz["alignment_keys"], dtype=np.uint32),
                np.ascontiguousarray(npz["alignment_concepts"], dtype=np.uint32),
            )
            pieces = unpack(npz["piece_text"], npz["piece_offsets"])
            return cls(
                weights,
                float(npz["bias"][0]),
                bytes(npz["dataset_sha256"]).hex(),
                int(npz["trained_on"][0]),
                alignment,
                Keywords.from_arrays(
                    **{k.removeprefix("keyword_"): npz[k] for k in npz.files if k.startswith("keyword_")}
                ),
                Tokeniser(pieces, npz["piece_scores"]),
                np.ascontiguousarray(npz["piece_weights"], dtype=np.float32),
            )

    @classmethod
    def from_weights(
        cls,
        weights: np.ndarray,
        bias: float,
        *,
        alignment: Alignment | None = None,
        keywords: Keywords | None = None,
        trained_on: int = 0,
    ) -> OfflineModel:
        weights = np.ascontiguousarray(weights, dtype=np.float32)
        return cls(weights, bias, "", trained_on, alignment or Alignment.empty(), keywords)

    def score(self, prompt: str, lang: str | None = None) -> float:
        """P(geographic) of one prompt (`lang`: its `guess_language`, when the caller has it)."""
        idx = feature_indices(prompt, self.alignment, self.keywords, lang)
        z = self.bias
        if len(idx):
            z += float(self.weights[idx].sum()) / math.sqrt(len(idx))
        if self.tokeniser is not None and (cut := self.tokeniser.ids(prompt)):
            z += float(self.piece_weights[cut].sum()) / len(cut)
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def scores(self, prompts: list[str]) -> list[float]:
        return [self.score(p) for p in prompts]


_lock = threading.Lock()
_shipped: list[OfflineModel] = []


def shipped_model() -> OfflineModel:
    """The model shipped with the package, read once per process."""
    with _lock:
        if not _shipped:
            _shipped.append(OfflineModel.load())
        return _shipped[0]
