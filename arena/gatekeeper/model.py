"""The fitted offline gatekeeper: a head per question of the policy (is the
photo in play? is it about a place?), each a weight per hashed n-gram, a
weight per encoder piece (pieces.py) and a bias, read from `data/model.npz`
(numpy arrays only, `allow_pickle=False`: loading it runs no code), with the
concept tables (keywords.py) and the place names (places.py) it was fitted
with. The verdict's logit is the least sure head's: a prompt is about the
place in the photo when every head says so. `python -m gatekeeper_build fit`
writes the file, and `data/pieces.model` beside it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arena.gatekeeper.alignment import Alignment
from arena.gatekeeper.features import DIMENSIONS, feature_indices
from arena.gatekeeper.keywords import Keywords
from arena.gatekeeper.pieces import DATA_DIR, PIECES_PATH, Tokeniser
from arena.gatekeeper.places import PlaceNames

MODEL_PATH = DATA_DIR / "model.npz"


@dataclass(frozen=True)
class Head:
    """One facet's logistic regression: a weight per feature bucket, one per piece, a bias."""

    name: str
    weights: np.ndarray  # float32, DIMENSIONS
    bias: float
    piece_weights: np.ndarray  # float32, one per piece of the model's tokeniser (none without)

    def logit(self, idx: np.ndarray, cut: np.ndarray) -> float:
        z = self.bias
        if len(idx):
            z += float(self.weights[idx].sum()) / math.sqrt(len(idx))
        if len(cut) and len(self.piece_weights):
            z += float(self.piece_weights[cut].sum()) / len(cut)
        return z

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            f"{self.name}_weights": self.weights,
            f"{self.name}_bias": np.array([self.bias], dtype=np.float64),
            f"{self.name}_piece_weights": self.piece_weights,
        }

    @classmethod
    def from_arrays(cls, name: str, npz: np.lib.npyio.NpzFile) -> Head:
        weights = np.ascontiguousarray(npz[f"{name}_weights"], dtype=np.float32)
        if weights.shape != (DIMENSIONS,):
            raise ValueError(f"head {name!r}: {weights.shape[0]} weights, the features need {DIMENSIONS}")
        piece_weights = np.ascontiguousarray(npz[f"{name}_piece_weights"], dtype=np.float32)
        return cls(name, weights, float(npz[f"{name}_bias"][0]), piece_weights)


@dataclass(frozen=True)
class OfflineModel:
    heads: tuple[Head, ...]
    dataset_sha256: str  # of the prompts it was fitted on
    trained_on: int
    alignment: Alignment  # token -> cross-lingual concept, induced with the weights
    keywords: Keywords | None  # CLDR's keyword -> emoji concepts, or None for a model fitted without
    tokeniser: Tokeniser | None = None  # the encoder's pieces, or None for a model fitted without
    places: PlaceNames | None = None  # the gazetteer's place names, or None for a model fitted without

    @classmethod
    def load(cls, path: Path = MODEL_PATH, pieces: Path = PIECES_PATH) -> OfflineModel:
        tokeniser = Tokeniser(pieces)
        with np.load(path, allow_pickle=False) as npz:
            alignment = Alignment(
                np.ascontiguousarray(npz["alignment_keys"], dtype=np.uint32),
                np.ascontiguousarray(npz["alignment_concepts"], dtype=np.uint32),
            )
            place_arrays = {k.removeprefix("place_"): npz[k] for k in npz.files if k.startswith("place_")}
            names = bytes(npz["head_names"]).decode().split()
            heads = tuple(Head.from_arrays(name, npz) for name in names)
            for head in heads:
                if len(head.piece_weights) != len(tokeniser):
                    raise ValueError(f"{path}: head {head.name!r} has {len(head.piece_weights)} piece weights")
            return cls(
                heads,
                bytes(npz["dataset_sha256"]).hex(),
                int(npz["trained_on"][0]),
                alignment,
                Keywords.from_arrays(
                    **{k.removeprefix("keyword_"): npz[k] for k in npz.files if k.startswith("keyword_")}
                ),
                tokeniser,
                PlaceNames.from_arrays(**place_arrays) if place_arrays else None,
            )

    def arrays(self) -> dict[str, np.ndarray]:
        """The heads as `load` reads them back (the rest of model.npz is the build's)."""
        out = {"head_names": np.frombuffer(" ".join(h.name for h in self.heads).encode(), dtype=np.uint8)}
        for head in self.heads:
            out |= head.arrays()
        return out

    def logits(self, prompt: str, lang: str | None = None) -> dict[str, float]:
        """Each head's logit for one prompt (`lang`: its `guess_language`, when the caller has it)."""
        idx = feature_indices(prompt, self.alignment, self.keywords, lang, self.places)
        cut = np.array(self.tokeniser.ids(prompt) if self.tokeniser is not None else [], dtype=np.intp)
        return {head.name: head.logit(idx, cut) for head in self.heads}

    def logit(self, prompt: str, lang: str | None = None) -> float:
        """The verdict's logit for one prompt (`verdict_logit` of its heads')."""
        return verdict_logit(self.logits(prompt, lang))

    def score(self, prompt: str, lang: str | None = None) -> float:
        """P(geographic) of one prompt."""
        return sigmoid(self.logit(prompt, lang))

    def scores(self, prompts: list[str]) -> list[float]:
        return [self.score(p) for p in prompts]


def probability(logits: dict[str, float]) -> float:
    """P(geographic) from the heads' logits."""
    return sigmoid(verdict_logit(logits))


def verdict_logit(logits: dict[str, float]) -> float:
    """The least sure head's logit, since every head must take the prompt."""
    return min(logits.values())


def sigmoid(z: float) -> float:
    """A logit's probability."""
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


_lock = threading.Lock()
_shipped: list[OfflineModel] = []


def shipped_model() -> OfflineModel:
    """The model shipped with the package, read once per process."""
    with _lock:
        if not _shipped:
            _shipped.append(OfflineModel.load())
        return _shipped[0]
