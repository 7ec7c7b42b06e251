"""Offline baseline contenders: the default pool, working with no keys and no network.

A pool entry `provider = "baseline"`, `model = "ocr-geolocator"` builds
`OcrGeolocator`; `gate = true` makes it read GATE's fixed-policy views and
show them as tool steps. `options` may tune `min_confidence`, `prior_weight`,
`use_question` and `top`.
"""

from __future__ import annotations

import threading
from functools import cache

from arena.config import ContenderConfig
from arena.contenders.baselines.geolocator import (
    GeolocatorOptions,
    OcrGeolocator,
    merge_lines,
)
from arena.contenders.baselines.ocr import OcrEngine, OcrLine, shared_engine
from arena.contenders.deps import ProviderDeps
from arena.geo.gazetteer import load_gazetteer

BASELINE_MODELS = ("ocr-geolocator",)

__all__ = [
    "GeolocatorOptions",
    "OcrEngine",
    "OcrGeolocator",
    "OcrLine",
    "build_baseline",
    "merge_lines",
    "shared_engine",
]


def build_baseline(cfg: ContenderConfig, deps: ProviderDeps) -> OcrGeolocator:
    """Build a baseline contender from its pool entry."""
    if cfg.model not in BASELINE_MODELS:
        raise ValueError(
            f"contender {cfg.name!r}: unknown baseline model {cfg.model!r} (known: {', '.join(BASELINE_MODELS)})"
        )
    engine = shared_engine()
    _warm_up(engine)
    return OcrGeolocator(
        name=cfg.name,
        engine=engine,
        images=deps.images,
        gate=cfg.gate,
        options=GeolocatorOptions.from_options(cfg.options),
    )


@cache  # once per process, however many baseline contenders the pool has
def _warm_up(engine: OcrEngine) -> threading.Thread:
    """Build the gazetteer and load the OCR models in the background, so the
    first battle after start-up does not wait about five seconds for them."""

    def work() -> None:
        load_gazetteer()
        engine.load()

    thread = threading.Thread(target=work, name="baseline-warm-up", daemon=True)
    thread.start()
    return thread
