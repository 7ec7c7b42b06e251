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

The LLM judge falls back to the offline classifier on any error, timeout or
malformed verdict, so a battle is never refused because a judge was down.
A refusal's `reason` is a sentence, in the asker's language when it is one
of the ten the offline model knows, that says what the arena takes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

from arena.config import ContenderConfig, PoolConfig
from arena.gatekeeper.offline import OfflineClassifier, shared_classifier

log = logging.getLogger(__name__)

Mode = Literal["offline", "llm", "off"]
FALLBACK = "offline (llm fallback)"


@dataclass(frozen=True)
class Verdict:
    """`score` is the confidence that the prompt is geographic (0..1);
    `classifier` names who decided, as a short stable key (fit for counting
    rejections by): "offline", "llm:<model>", "offline (llm fallback)",
    "empty" or "off"."""

    geographic: bool
    reason: str
    score: float
    classifier: str


class Gatekeeper:
    def __init__(self, *, mode: Mode = "offline", judge: Any = None, threshold: float = 0.5) -> None:
        self.mode = mode
        self.judge = judge  # an LLMJudge, when mode == "llm"
        self.threshold = threshold
        self._offline: OfflineClassifier | None = None

    async def classify(self, prompt: str) -> Verdict:
        """Decide whether `prompt` may start a battle."""
        text = " ".join(prompt.split())
        if self.mode == "off":
            return Verdict(True, "The gatekeeper is switched off.", 1.0, "off")
        offline = await self._classifier()
        if not text:
            return Verdict(False, rejection_message("en"), 0.0, "empty")
        if self.mode == "llm" and self.judge is not None:
            try:
                geographic, why = await self.judge.judge(text)
            except Exception as exc:  # noqa: BLE001 - any failure at all: the offline model decides
                log.warning("gatekeeper LLM failed, using the offline classifier: %s", _short(exc))
                return self._offline_verdict(offline, text, FALLBACK)
            if geographic:
                return Verdict(True, why, 1.0, self.judge.name)
            return Verdict(False, rejection_message(offline.language(text)), 0.0, self.judge.name)
        return self._offline_verdict(offline, text, "offline")

    async def warm(self) -> None:
        """Train the offline model now (in a thread) rather than on the first upload."""
        if self.mode != "off":
            await self._classifier()

    def _offline_verdict(self, offline: OfflineClassifier, text: str, classifier: str) -> Verdict:
        score = offline.score(text)
        if score >= self.threshold:
            return Verdict(True, "A geographic question.", round(score, 4), classifier)
        return Verdict(False, rejection_message(offline.language(text)), round(score, 4), classifier)

    async def _classifier(self) -> OfflineClassifier:
        if self._offline is None:
            # Training takes a few seconds of CPU: keep the event loop free.
            self._offline = await asyncio.to_thread(shared_classifier)
        return self._offline


def build_gatekeeper(pool_config: PoolConfig, deps: Any = None) -> Gatekeeper:
    """The gatekeeper `[gatekeeper]` asks for. `deps` (a `ProviderDeps`) is
    needed for an LLM judge; without it the offline classifier is used."""
    section = dict(pool_config.gatekeeper)
    mode = str(section.get("mode", "llm" if ("contender" in section or "provider" in section) else "offline"))
    if mode not in ("offline", "llm", "off"):
        raise ValueError(f"[gatekeeper] mode must be \"offline\", \"llm\" or \"off\", not {mode!r}")
    threshold = float(section.get("threshold", 0.5))
    if not 0 < threshold < 1:
        raise ValueError("[gatekeeper] threshold must be between 0 and 1")
    if mode != "llm":
        return Gatekeeper(mode=mode, threshold=threshold)  # type: ignore[arg-type]
    if deps is None:
        log.warning("gatekeeper: no HTTP client to reach the LLM judge; using the offline classifier")
        return Gatekeeper(mode="offline", threshold=threshold)
    from arena.gatekeeper.llm import LLMJudge

    cfg = _judge_config(section, pool_config)
    timeout = float(section.get("timeout", 8.0))
    judge = LLMJudge.from_config(cfg, deps, timeout=timeout)
    return Gatekeeper(mode="llm", judge=judge, threshold=threshold)


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
        raise ValueError("[gatekeeper] mode \"llm\" needs `contender = \"<pool name>\"` or `provider` and `model`")
    return ContenderConfig(name="gatekeeper", **fields)


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc) or type(exc).__name__
    return text[:120]


# -- what a refused person reads -------------------------------------------------

REJECTION_MESSAGES: dict[str, str] = {
    "en": "GeoArena only takes geographic questions about your photo, for example where it was taken, which country "
    "or city it shows, or what the landscape, climate, signs or roads say about the place. Please ask something "
    "like that.",
    "zh": "GeoArena 只接受关于照片的地理问题，例如照片是在哪里拍的、拍的是哪个国家或城市，或者地貌、气候、路牌和道路透露了哪些地点线索。"
    "请换一个这样的问题。",
    "ja": "GeoArenaが受け付けるのは写真についての地理的な質問だけです。たとえば撮影場所、写っている国や都市、地形・気候・標識・道路から"
    "分かる場所の手がかりなどです。そのような質問をしてください。",
    "ko": "GeoArena는 사진에 대한 지리 질문만 받습니다. 예를 들어 촬영 장소, 사진 속 나라나 도시, 지형·기후·표지판·도로로 알 수 있는 "
    "장소 단서 같은 질문이에요. 이런 질문으로 다시 물어봐 주세요.",
    "es": "GeoArena solo acepta preguntas geográficas sobre tu foto: por ejemplo, dónde se tomó, qué país o ciudad "
    "muestra, o qué dicen el paisaje, el clima, los carteles o las carreteras sobre el lugar. Prueba con una "
    "pregunta así.",
    "fr": "GeoArena n'accepte que des questions géographiques sur votre photo : par exemple où elle a été prise, quel "
    "pays ou quelle ville elle montre, ou ce que le paysage, le climat, les panneaux ou les routes révèlent du lieu. "
    "Essayez une question de ce genre.",
    "de": "GeoArena nimmt nur geografische Fragen zu Ihrem Foto an, etwa wo es aufgenommen wurde, welches Land oder "
    "welche Stadt es zeigt oder was Landschaft, Klima, Schilder oder Straßen über den Ort verraten. Bitte stellen "
    "Sie eine solche Frage.",
    "ru": "GeoArena принимает только географические вопросы о вашей фотографии: например, где она снята, какая "
    "страна или город на ней, или что пейзаж, климат, вывески и дороги говорят о месте. Попробуйте задать такой "
    "вопрос.",
    "ar": "لا يقبل GeoArena إلا الأسئلة الجغرافية عن صورتك، مثل: أين التُقطت، أو أي بلد أو مدينة تُظهر، أو ما الذي تكشفه "
    "التضاريس أو المناخ أو اللافتات أو الطرق عن المكان. جرّب سؤالًا من هذا النوع.",
    "pt": "O GeoArena só aceita perguntas geográficas sobre a sua foto, por exemplo onde ela foi tirada, que país ou "
    "cidade mostra, ou o que a paisagem, o clima, as placas ou as estradas dizem sobre o lugar. Tente uma pergunta "
    "assim.",
}


def rejection_message(language: str) -> str:
    return REJECTION_MESSAGES.get(language, REJECTION_MESSAGES["en"])
