"""Identity-leak detection over answers and trajectories."""

from __future__ import annotations

import time

import pytest

from arena.config import ContenderConfig, PoolConfig
from arena.pool import find_identity_leaks

POOL = PoolConfig(contenders=[
    ContenderConfig(name="gpt-4o+gate", provider="openai", model="gpt-4o", base_url="http://x"),
    ContenderConfig(name="qwen-local", provider="openai", model="Qwen/Qwen2.5-VL-7B-Instruct", base_url="http://x"),
    ContenderConfig(name="vision-llava", provider="openai", model="llava:13b", base_url="http://x"),
    ContenderConfig(name="ocr-geolocator", provider="baseline", model="ocr-geolocator"),
])  # fmt: skip


class TestFindIdentityLeaks:
    @pytest.mark.parametrize(
        ("text", "found"),
        [
            ("As a model trained by OpenAI, I think this is Paris.", ["openai"]),
            ("I'm Claude, made by Anthropic. This is Lisbon.", ["anthropic", "claude"]),
            ("GPT-4o here: the signs are Cyrillic.", ["gpt-4o"]),
            ("gemini thinks it is Kyoto", ["gemini"]),
            ("Running as qwen2.5-vl-7b-instruct on vLLM.", ["qwen2.5-vl-7b-instruct"]),
            ("LLaVA says: probably Peru.", ["llava"]),
            ("I am Llama-3.2 from Meta AI.", ["llama-3.2", "meta ai"]),
            ("我是通义千问，这张照片在杭州。", ["通义千问"]),
            ("DeepSeek-VL believes this is Chengdu.", ["deepseek"]),
        ],
    )
    def test_names_and_makers(self, text: str, found: list[str]) -> None:
        assert find_identity_leaks([text], POOL) == found

    @pytest.mark.parametrize(
        "text",
        [
            "The pyramids suggest Egypt, probably near Giza.",  # "gpt" inside a word
            "You can check this on Google Maps or Street View.",
            "A llama grazing on the altiplano points to the Andes.",
            "The mistral wind shapes the trees in Provence.",
            "Saint-Claude is a town in the Jura.",
            "Claudette Colbert was born near Paris.",
            "The Phi Phi islands are in Krabi province.",
            "The ocr-geolocator found the word 'Lisboa'.",  # baselines are labelled anyway
            "The Amazon rainforest covers most of this region.",
            "Source: https://www.google.com/maps/place/Porto and openai.com/research, www.anthropic.com",
        ],
    )
    def test_innocent_geography_is_not_a_leak(self, text: str) -> None:
        assert find_identity_leaks([text], POOL) == []

    def test_trajectories_and_several_texts(self) -> None:
        texts = ["The answer is Paris.", "", "Thought: as Claude I should crop the sign. Observation: 'RUE'"]
        assert find_identity_leaks(texts, POOL) == ["claude"]

    def test_configurable_words_and_ignores(self) -> None:
        pool = PoolConfig.model_validate(
            {**POOL.model_dump(), "leaks": {"words": ["Acme Vision"], "ignore": ["google arts"]}}
        )
        assert find_identity_leaks(["Built by acme  vision labs; see Google Arts."], pool) == ["acme vision"]
        only_mine = PoolConfig.model_validate({**POOL.model_dump(), "leaks": {"defaults": False}})
        assert find_identity_leaks(["Anthropic made me, I am gpt-4o"], only_mine) == ["gpt-4o"]

    @pytest.mark.parametrize("junk", ["a." * 20_000, "a-" * 20_000, "1.2-" * 10_000])
    def test_dotted_runs_take_linear_time(self, junk: str) -> None:
        # The link pattern retried every label of a dotted run as a new start and scanned to
        # its end: 40,000 characters of "a.a.a..." in an answer blocked the event loop for ~9 s
        # when the battle finished (and 200,000 for over four minutes).
        started = time.perf_counter()
        assert find_identity_leaks([f"Lisbon. {junk} Claude"], POOL) == ["claude"]
        assert time.perf_counter() - started < 0.5

    def test_links_after_an_ellipsis_or_a_hyphen_are_still_blanked(self) -> None:
        assert find_identity_leaks(["See ...google.com/maps and -openai.com, e.g.anthropic.com"], POOL) == []

    def test_the_terms_tried_are_narrowed_without_changing_what_is_found(self) -> None:
        """Only the terms whose first word is in the text are tried: every default and pool term,
        alone, glued and among others, is found exactly as by one alternation of all of them."""
        from arena.pool import leaks

        matcher = leaks._matcher_for(leaks._terms_key(POOL))
        whole = leaks._alternation(matcher.ordered)
        samples = [
            f"{before}{term.replace('#', ' 3.1')}{after}"
            for term in matcher.ordered
            for before, after in (("", ""), ("i am ", "-4o, hello"), ("x", "y"))
        ]
        texts = samples + [" ".join(samples[i : i + 7]) for i in range(0, len(samples), 7)] + ["lisbon, portugal"]
        for text in texts:
            narrowed = matcher.terms_in(text)
            found = [m.group(0) for m in narrowed.finditer(text)] if narrowed is not None else []
            assert found == [m.group(0) for m in whole.finditer(text)], text
        assert matcher.terms_in("lisbon, portugal") is None
