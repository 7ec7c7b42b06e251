"""The gatekeeper as the battle flow uses it: offline by default, three-way (take, unsure,
refuse), an LLM judge on a loopback OpenAI-compatible server when configured, and the
offline model whenever the judge fails."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arena.config import ContenderConfig, PoolConfig
from arena.contenders.deps import ProviderDeps
from arena.gatekeeper import Verdict, build_gatekeeper, rejection_message
from arena.gatekeeper.gatekeeper import SURE, THRESHOLD
from arena.gatekeeper.llm import MalformedVerdict, parse_verdict
from arena.geo.language import shipped_profiles
from arena.images.store import LocalImageStore
from tests.gatekeeper.judge_server import JudgeServer
from tests.servers import serve_in_thread

GEO = "Which country is this street in?"
NOT_GEO = "What breed is this dog?"


@pytest.fixture(scope="module")
def judge_server() -> Iterator[tuple[str, JudgeServer]]:
    server = JudgeServer()
    with serve_in_thread(server.app) as url:
        yield url + "/v1", server


def pool_with(gatekeeper: dict[str, object], *contenders: ContenderConfig) -> PoolConfig:
    return PoolConfig(contenders=list(contenders), gatekeeper=gatekeeper)


def deps_for(pool: PoolConfig, http: httpx.AsyncClient, tmp_path: Path) -> ProviderDeps:
    return ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=pool)


class TestOfflineGatekeeper:
    async def test_default_is_offline(self) -> None:
        gatekeeper = build_gatekeeper(PoolConfig(), None)
        assert (gatekeeper.mode, gatekeeper.threshold, gatekeeper.sure) == ("offline", THRESHOLD, SURE)
        accepted = await gatekeeper.classify(GEO)
        refused = await gatekeeper.classify(NOT_GEO)
        assert accepted.geographic and accepted.classifier == "offline" and accepted.score >= SURE
        assert accepted.decision == "take" and not accepted.unsure
        assert not refused.geographic and refused.score < THRESHOLD and refused.decision == "refuse"
        assert refused.reason == rejection_message("en")
        assert "questions about the place in your photo" in refused.reason

    async def test_between_the_two_lines_the_battle_runs_unsure(self) -> None:
        gatekeeper = build_gatekeeper(PoolConfig(gatekeeper={"threshold": 0.01, "sure": 0.999999}), None)
        verdict = await gatekeeper.classify(GEO)
        assert verdict.geographic and verdict.unsure and verdict.decision == "unsure"
        assert [gatekeeper.decide(s) for s in (0.0, 0.01, 0.5, 0.999999)] == ["refuse", "unsure", "unsure", "take"]

    @pytest.mark.parametrize(
        "prompt",
        [
            "Which country is this? 1. Japan 2. South Korea 3. China",  # the issue's new user, refused on main
            "判断属于哪个国家：a.泰国 b.老挝 c.越南",
            "Those black-and-white kerbs: where do they paint them like that?",
        ],
    )
    async def test_the_issues_forms_start_a_battle(self, prompt: str) -> None:
        # (its bare "Lyon / Marseille / Bordeaux / Lille?" scores 0.06 and is refused at the shipped
        # line: a known miss that benchmarks/gatekeeper.py reports from the unseen set)
        assert (await build_gatekeeper(PoolConfig(), None).classify(prompt)).geographic

    async def test_refusal_speaks_the_askers_language(self) -> None:
        gatekeeper = build_gatekeeper(PoolConfig(), None)
        verdict = await gatekeeper.classify("Wie viele Kalorien hat dieser Kuchen?")
        assert not verdict.geographic
        assert verdict.reason == rejection_message("de")
        assert verdict.reason.startswith("GeoArena nimmt Fragen zum Ort")

    async def test_empty_prompt_is_refused(self) -> None:
        verdict = await build_gatekeeper(PoolConfig(), None).classify("   \n ")
        assert verdict == Verdict(False, rejection_message("en"), 0.0, "empty", "en", "refuse")

    @pytest.mark.parametrize(
        "prompt", ["的" * 2000, "😀", "🏔️🌍🗺️📍" * 20, "?!", "x", "12345 67890", "的是" * 500, "a" * 300]
    )
    async def test_prompt_without_words_is_refused_unread(self, prompt: str) -> None:
        # each of the first three was taken by the offline model on its own (0.70, 0.75, 0.33)
        verdict = await build_gatekeeper(PoolConfig(), None).classify(prompt)
        assert (verdict.geographic, verdict.score, verdict.classifier) == (False, 0.0, "no words")

    @pytest.mark.parametrize("prompt", ["Where?", "哪里？", "где?", "ここはどこ?", "Ni wapi?"])
    async def test_short_questions_are_read(self, prompt: str) -> None:
        verdict = await build_gatekeeper(PoolConfig(), None).classify(prompt)
        assert verdict.classifier == "offline" and verdict.geographic

    async def test_threshold_and_off_mode(self) -> None:
        strict = build_gatekeeper(PoolConfig(gatekeeper={"threshold": 0.999999}), None)
        assert not (await strict.classify(GEO)).geographic
        off = build_gatekeeper(PoolConfig(gatekeeper={"mode": "off"}), None)
        assert (await off.classify(NOT_GEO)).geographic

    def test_bad_configuration_is_explained(self) -> None:
        with pytest.raises(ValueError, match="mode must be"):
            build_gatekeeper(PoolConfig(gatekeeper={"mode": "strict"}), None)
        with pytest.raises(ValueError, match="threshold"):
            build_gatekeeper(PoolConfig(gatekeeper={"threshold": 2}), None)
        with pytest.raises(ValueError, match="sure between threshold and 1"):
            build_gatekeeper(PoolConfig(gatekeeper={"threshold": 0.3, "sure": 0.2}), None)


class TestLLMJudge:
    async def test_dedicated_endpoint_accepts(
        self, judge_server: tuple[str, JudgeServer], http: httpx.AsyncClient, tmp_path: Path
    ) -> None:
        url, server = judge_server
        pool = pool_with({"provider": "openai", "model": "verdict-yes", "base_url": url})
        verdict = await build_gatekeeper(pool, deps_for(pool, http, tmp_path)).classify(GEO)
        assert verdict == Verdict(True, "It asks where the photo was taken.", 1.0, "llm:verdict-yes")
        sent = server.requests[-1]
        assert sent["temperature"] == 0.0 and sent["max_tokens"] == 200
        assert GEO in sent["messages"][-1]["content"]
        assert '"geographic"' in sent["messages"][0]["content"]

    async def test_pool_contender_refuses_with_the_arena_sentence(
        self, judge_server: tuple[str, JudgeServer], http: httpx.AsyncClient, tmp_path: Path
    ) -> None:
        url, _ = judge_server
        judge = ContenderConfig(name="judge-model", provider="openai", model="verdict-no", base_url=url)
        other = ContenderConfig(name="other", provider="openai", model="verdict-yes", base_url=url)
        pool = pool_with({"contender": "judge-model"}, judge, other)
        verdict = await build_gatekeeper(pool, deps_for(pool, http, tmp_path)).classify("Qué raza es este perro?")
        assert not verdict.geographic and verdict.classifier == "llm:verdict-no"
        # The model's own words are not shown; the arena's sentence is, in Spanish.
        assert verdict.reason == rejection_message("es")

    async def test_fenced_json_is_accepted(
        self, judge_server: tuple[str, JudgeServer], http: httpx.AsyncClient, tmp_path: Path
    ) -> None:
        url, _ = judge_server
        pool = pool_with({"provider": "openai", "model": "fenced", "base_url": url})
        verdict = await build_gatekeeper(pool, deps_for(pool, http, tmp_path)).classify(GEO)
        assert verdict.geographic and verdict.classifier == "llm:fenced"

    @pytest.mark.parametrize("model", ["prose", "wrong-type", "error-500", "stall"])
    async def test_falls_back_to_offline(
        self, judge_server: tuple[str, JudgeServer], http: httpx.AsyncClient, tmp_path: Path, model: str
    ) -> None:
        url, _ = judge_server
        pool = pool_with({"provider": "openai", "model": model, "base_url": url, "timeout": 1.0})
        gatekeeper = build_gatekeeper(pool, deps_for(pool, http, tmp_path))
        await gatekeeper.warm()
        started = time.monotonic()
        refused = await gatekeeper.classify(NOT_GEO)
        assert time.monotonic() - started < 3  # the judge's timeout, not the contender's
        assert not refused.geographic
        assert refused.classifier == "offline (llm fallback)"
        assert refused.reason == rejection_message("en")
        assert (await gatekeeper.classify(GEO)).geographic

    async def test_unknown_contender_and_baseline_judges_are_refused(
        self, http: httpx.AsyncClient, tmp_path: Path
    ) -> None:
        baseline = ContenderConfig(name="ocr", provider="baseline", model="ocr-geolocator")
        deps = ProviderDeps(http=http, images=LocalImageStore(tmp_path), pool=PoolConfig())
        with pytest.raises(ValueError, match="not in the pool"):
            build_gatekeeper(pool_with({"contender": "nope"}, baseline), deps)
        with pytest.raises(ValueError, match="baseline"):
            build_gatekeeper(pool_with({"contender": "ocr"}, baseline), deps)

    async def test_no_words_never_reach_the_judge(
        self, judge_server: tuple[str, JudgeServer], http: httpx.AsyncClient, tmp_path: Path
    ) -> None:
        url, server = judge_server
        pool = pool_with({"provider": "openai", "model": "verdict-yes", "base_url": url})
        sent = len(server.requests)
        verdict = await build_gatekeeper(pool, deps_for(pool, http, tmp_path)).classify("🌍" * 10)
        assert not verdict.geographic and verdict.classifier == "no words"
        assert len(server.requests) == sent

    def test_without_http_client_the_offline_model_is_used(self) -> None:
        gatekeeper = build_gatekeeper(pool_with({"provider": "openai", "model": "m", "base_url": "http://x"}), None)
        assert gatekeeper.mode == "offline"


class TestParseVerdict:
    def test_strict_shapes(self) -> None:
        assert parse_verdict(' {"geographic": false, "reason": "  A recipe.  "} ') == (False, "A recipe.")
        for bad in (
            '{"geographic": 1, "reason": "x"}',
            '{"geographic": true}',
            "[true]",
            'Answer: {"geographic": true, "reason": "x"}',
            '{"geographic": true, "reason": ""}',
        ):
            with pytest.raises(MalformedVerdict):
                parse_verdict(bad)


class TestServerStart:
    async def test_the_model_is_loaded_before_the_first_request(self, tmp_path: Path) -> None:
        from arena.app import create_app
        from arena.config import Settings

        settings = Settings(
            env="test",
            data_dir=tmp_path / "data",
            config=tmp_path / "no-pool.toml",
            database_url=f"sqlite:///{tmp_path / 'arena.db'}",
            secret_key="test-secret",
        )
        app = create_app(settings)
        shipped_profiles.cache_clear()
        async with app.router.lifespan_context(app):
            gatekeeper = app.state.services.gatekeeper
            assert gatekeeper._offline is not None  # warmed by the lifespan, not by a first upload
            assert gatekeeper._offline.trained_on > 0
            assert shipped_profiles.cache_info().currsize == 1  # a verdict given: the languages loaded


class TestRefusalLanguage:
    @pytest.mark.parametrize(
        ("prompt", "language"),
        [
            ("Napiš mi vtip o kočkách.", "cs"),
            ("Γράψε μου ένα ανέκδοτο για γάτες.", "el"),
            ("یک جوک دربارهٔ گربه‌ها بگو.", "fa"),
            ("ספר לי בדיחה על חתולים.", "he"),
            ("बिल्लियों पर एक चुटकुला सुनाओ।", "hi"),
            ("বিড়াল নিয়ে একটা কৌতুক বলো।", "bn"),
            ("Mondj egy viccet a macskákról.", "hu"),
            ("Raccontami una barzelletta sui gatti.", "it"),
            ("Opowiedz mi dowcip o kotach.", "pl"),
            ("Spune-mi o glumă despre pisici.", "ro"),
            ("Berätta ett skämt om katter.", "sv"),
            ("Niambie kichekesho kuhusu paka.", "sw"),
            ("เล่าเรื่องตลกเกี่ยวกับแมวหน่อย", "th"),
            ("Magkuwento ka ng biro tungkol sa mga pusa.", "tl"),
            ("Bana kediler hakkında bir fıkra anlat.", "tr"),
            ("Розкажи мені анекдот про котів.", "uk"),
            ("Kể cho tôi nghe một câu chuyện cười về mèo.", "vi"),
            ("Vertel me een mop over katten.", "nl"),
        ],
    )
    async def test_refused_in_the_prompts_language(self, prompt: str, language: str) -> None:
        verdict = await build_gatekeeper(PoolConfig(), None).classify(prompt)
        assert not verdict.geographic
        assert verdict.reason == rejection_message(language)
