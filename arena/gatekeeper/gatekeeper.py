"""The gatekeeper: may a battle prompt start a battle?

`build_gatekeeper(pool_config, deps)` reads the `[gatekeeper]` table of
`arena.toml`:

    [gatekeeper]
    mode = "llm"              # "offline" (default), "llm", or "off" (accept everything)
    contender = "gpt-4o-mini" # judge with a pool contender's model ...
    # ... or a dedicated endpoint with the `[[contenders]]` fields:
    # provider = "openai"; model = "gpt-4o-mini"; base_url = "https://api.openai.com/v1"; api_key_env = "OPENAI_API_KEY"
    timeout = 8.0             # seconds for the LLM's verdict, then the offline model decides
    threshold = 0.1           # offline: refused under this P(geographic): clearly another kind
    sure = 0.5                # offline: taken from this; between the two the battle runs, tagged unsure

The verdict is three-way, recall first: a wrong refusal loses a person and
their photo for good, a wrong acceptance costs one battle that the rank job
can still set aside. *take* and *unsure* both start the battle (`geographic`
is true); an unsure battle is tagged in the database, and `arena rank` sets
it aside only when a re-check says it is not geographic (recheck.py). The
LLM judge falls back to the offline classifier on any error, timeout or
malformed verdict, so a battle is never refused because a judge was down.
Both follow `policy.py`; a refusal's `reason` is that policy's short form in
the asker's language (any of the thirty), English otherwise.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

from arena.config import ContenderConfig, PoolConfig
from arena.gatekeeper.model import OfflineModel, shipped_model
from arena.gatekeeper.policy import in_words, refusal, refusal_language
from arena.geo.language import guess_language

log = logging.getLogger(__name__)

Mode = Literal["offline", "llm", "off"]
Decision = Literal["take", "unsure", "refuse"]
FALLBACK = "offline (llm fallback)"
# The offline model's operating point, chosen on prompts of forms it never saw (docs/decisions/
# 0100-recall-first-gatekeeper.md): refused only under THRESHOLD, untagged from SURE.
THRESHOLD = 0.1
SURE = 0.5
# A short question and one long enough to read every part of the model: `warm` gives both verdicts
# before the first upload, so no one waits for a first call's lazy set-up.
WARMING = (
    "Where was this photo taken?",
    "This photo shows a harbour town with white houses, red roofs and fishing boats, and the signs "
    "are in Portuguese. Was it taken in Portugal, near Lisbon or Porto, or in the Algarve, or in "
    "Galicia in Spain? Explain which clues in the architecture, the vegetation, the road markings "
    "and the language of the signs point to the region, and give your best guess of the town.",
)


@dataclass(frozen=True)
class Verdict:
    """`geographic`: the battle may run (the decision is "take" or "unsure"). `decision`: the
    three-way verdict. `score` is the confidence that the prompt is geographic (0..1);
    `classifier` names who decided, as a short stable key (fit for counting refusals by):
    "offline", "llm:<model>", "offline (llm fallback)", "empty", "no words" (policy.in_words)
    or "off". `lang` is the language `reason` is written in."""

    geographic: bool
    reason: str
    score: float
    classifier: str
    lang: str = "en"
    decision: Decision = "take"

    @property
    def unsure(self) -> bool:
        return self.decision == "unsure"


class Gatekeeper:
    def __init__(
        self, *, mode: Mode = "offline", judge: Any = None, threshold: float = THRESHOLD, sure: float = SURE
    ) -> None:
        self.mode = mode
        self.judge = judge  # an LLMJudge, when mode == "llm"
        self.threshold, self.sure = threshold, sure
        self._offline: OfflineModel | None = None

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

    def decide(self, score: float) -> Decision:
        """The three-way verdict of an offline score."""
        if score < self.threshold:
            return "refuse"
        return "take" if score >= self.sure else "unsure"

    async def warm(self) -> None:
        """Load the offline model now, off the event loop, rather than on the first upload; then
        give the WARMING verdicts (they load the language profiles)."""
        if self.mode == "off":
            return
        offline = await self._classifier()
        for prompt in WARMING:
            await self._offline_verdict(offline, prompt, "offline")

    @property
    def warmed(self) -> bool:
        """Whether a verdict can be given without loading a model first (for `/readyz`)."""
        return self.mode == "off" or self._offline is not None

    async def _offline_verdict(self, offline: OfflineModel, text: str, classifier: str) -> Verdict:
        lang = guess_language(text)  # the concepts' language, and the refusal's
        score = round(await asyncio.to_thread(offline.score, text, lang), 4)  # numpy work: off the loop
        decision = self.decide(score)
        if decision == "refuse":
            return _refusal(lang, score, classifier)
        reason = "A question about the place in the photo." if decision == "take" else UNSURE_REASON
        return Verdict(True, reason, score, classifier, decision=decision)

    async def _classifier(self) -> OfflineModel:
        if self._offline is None:
            # Reading the weights is file I/O: keep the event loop free.
            self._offline = await asyncio.to_thread(shipped_model)
        return self._offline


UNSURE_REASON = "Perhaps a question about the place in the photo: the battle runs, and may be re-checked."


def build_gatekeeper(pool_config: PoolConfig, deps: Any = None) -> Gatekeeper:
    """The gatekeeper `[gatekeeper]` asks for. `deps` (a `ProviderDeps`) is
    needed for an LLM judge; without it the offline classifier is used."""
    section = pool_config.gatekeeper.given()
    mode = str(section.get("mode", "llm" if ("contender" in section or "provider" in section) else "offline"))
    if mode not in ("offline", "llm", "off"):
        raise ValueError(f'[gatekeeper] mode must be "offline", "llm" or "off", not {mode!r}')
    threshold = float(section.get("threshold", THRESHOLD))
    sure = float(section.get("sure", max(SURE, threshold)))
    if not 0 < threshold < 1 or not threshold <= sure <= 1:
        raise ValueError("[gatekeeper] threshold must be between 0 and 1, and sure between threshold and 1")
    if mode != "llm":
        return Gatekeeper(mode=mode, threshold=threshold, sure=sure)  # type: ignore[arg-type]
    if deps is None:
        log.warning("gatekeeper: no HTTP client to reach the LLM judge; using the offline classifier")
        return Gatekeeper(mode="offline", threshold=threshold, sure=sure)
    judge = build_judge(pool_config, deps)
    return Gatekeeper(mode="llm", judge=judge, threshold=threshold, sure=sure)


def build_judge(pool_config: PoolConfig, deps: Any) -> Any:
    """The LLM judge `[gatekeeper]` names (an `LLMJudge`), or None when it names none."""
    section = pool_config.gatekeeper.given()
    if not ("contender" in section or "provider" in section) or section.get("mode") in ("offline", "off"):
        return None
    from arena.gatekeeper.llm import LLMJudge

    cfg = _judge_config(section, pool_config)
    return LLMJudge.from_config(cfg, deps, timeout=float(section.get("timeout", 8.0)))


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
    return Verdict(False, rejection_message(language), score, classifier, refusal_language(language), "refuse")


def rejection_message(language: str) -> str:
    """What a refused person reads, in `language` (one of `policy.LANGUAGES`, else English)."""
    return refusal(language)
