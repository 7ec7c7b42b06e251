"""The offline grader on real gazetteer data, and the LLM grader against a
loopback judge speaking the chat-completions protocol."""

from __future__ import annotations

import httpx
import pytest

from arena.bench.dataset import load_dataset
from arena.bench.grades import Run, extract_final_answer
from arena.bench.llm_grader import LLMGrader, MalformedVerdict, parse_grade
from arena.bench.offline import OfflineGrader, grade_answer
from arena.config import ContenderConfig
from arena.contenders.apis.openai import OpenAIChat  # noqa: F401  (registers the provider)
from arena.contenders.base import ContenderError
from arena.contenders.compose import build_chat_model
from arena.geo.gazetteer import load_gazetteer
from tests.conftest import SAMPLE_DIR


@pytest.fixture(scope="module")
def gazetteer():
    return load_gazetteer()


class TestFinalAnswer:
    @pytest.mark.parametrize(
        ("answer", "final"),
        [
            ("Explanation: signs.\nExact Answer: Kyoto, Japan\nConfidence: 70%", "Kyoto, Japan"),
            ("blah\n**Final answer:** **Japan**", "Japan"),
            ("<answer>Anshun</answer>", "Anshun"),
            (
                "> x\n\n**Best guess: Anshun, Guizhou, China** (26.2500° N, 105.9333° E) · certainty: **low**.",
                "Anshun, Guizhou, China",
            ),
            ("I think it is somewhere nice.", None),
        ],
    )
    def test_markers(self, answer, final):
        assert extract_final_answer(answer) == final


class TestOfflineGrader:
    @pytest.mark.parametrize(
        ("gold", "answer", "question", "correct"),
        [
            ("Japan", "日本", "Where was this taken?", True),  # pycountry translation
            ("Spain", "España", "Which country?", True),
            ("Japan", "Japan or South Korea", "Where?", False),  # a hedge
            ("Anshun City, Guizhou Province", "Anshun, Guizhou, China", "Which city in western China?", True),
            ("Anshun City, Guizhou Province", "Guizhou", "Which city in western China?", False),  # not specific enough
            ("Guangxi, China", "Nanning", "Which province?", True),  # inside the gold
            ("Guangxi, China", "Guangdong", "Which province?", False),
            ("China, Taiwan", "Taiwan", "Which part of China is this?", True),
            ("China, Taiwan", "China", "Which part of China is this?", False),  # the question's own given
            ("Shanxi", "Shaanxi", "Which province: Shanxi / Guangxi / Gansu", False),
            ("Shanxi", "Shanxi", "Which province: Shanxi / Guangxi / Gansu", True),
            ("Zhongshan City", "Zhongshan, Guangdong", "Which city?", True),
        ],
    )
    def test_places(self, gazetteer, gold, answer, question, correct):
        assert grade_answer(gold, answer, question, gazetteer)[0] is correct

    @pytest.mark.parametrize(
        ("gold", "answer", "correct"),
        [
            ("3%", "3 percent", True),
            ("3%", "5%", False),
            ("10", "10 yuan", True),
            ("Xi'an Passenger Ship", "the Xian passenger ship", True),
            ("Xi'an Passenger Ship", "Xi'an Pasenger Ship", True),  # one slip in a long word
            ("AC Milan", "A.C. Milan", True),
            ("AC Milan", "Inter Milan", False),  # a club, not the city
        ],
    )
    def test_text_answers(self, gazetteer, gold, answer, correct):
        assert grade_answer(gold, answer, "Q?", gazetteer, place_answer=False)[0] is correct

    async def test_grades_a_sample_instance(self, gazetteer):
        instance = next(i for i in load_dataset(SAMPLE_DIR / "level1_en.jsonl") if i.question_id == "5")
        grader = OfflineGrader(gazetteer)
        right = await grader.grade(
            instance, Run("Explanation: orange taxis.\nExact Answer: Changchun\nConfidence: 60%")
        )
        assert right.correct and right.extracted_answer == "Changchun" and right.confidence == 60
        assert right.milestones is None  # the offline grader does not judge milestones
        wrong = await grader.grade(instance, Run("I can't place this photo. Your question mentions China."))
        assert not wrong.correct


def judge(base_url: str, model: str, http: httpx.AsyncClient) -> LLMGrader:
    from arena.contenders.deps import ProviderDeps

    cfg = ContenderConfig(name=f"judge-{model}", provider="openai", base_url=base_url, model=model, timeout=10)
    deps = ProviderDeps(http=http, images=None, pool=None)  # type: ignore[arg-type]
    return LLMGrader(build_chat_model(cfg, deps), judge=cfg.name, timeout=10)


class TestLLMGrader:
    @pytest.fixture
    def instance(self):
        return next(i for i in load_dataset(SAMPLE_DIR / "level2_en.jsonl") if i.question_id == "1")

    async def test_verdict_and_milestones_from_the_judge(self, judge_server, http, instance):
        url, server = judge_server
        grader = judge(url, "grader-fair", http)
        trajectory = (
            {
                "tool": "web_text_search",
                "args": {"query": "Taishō emperor"},
                "observation": "Emperor Taishō ... Shōwa died in 1989",
            },
        )
        grade = await grader.grade(instance, Run("Exact Answer: 3%\nConfidence: 80%", trajectory))
        assert grade.correct and grade.extracted_answer == "3%" and grade.confidence == 80
        assert grade.milestones is not None and len(grade.milestones) == len(instance.milestones)
        request = server.requests[-1]
        assert request["model"] == "grader-fair" and request["temperature"] is not None
        prompt = request["messages"][-1]["content"]
        assert "[correct_answer]: 3%" in prompt and "web_text_search" in prompt
        assert grader.name == "llm:judge-grader-fair"

    async def test_wrong_answer(self, judge_server, http, instance):
        grade = await judge(judge_server[0], "grader-fenced", http).grade(instance, Run("Exact Answer: 8%"))
        assert grade.correct is False

    async def test_prose_is_asked_again_then_refused(self, judge_server, http, instance):
        url, server = judge_server
        before = server.seen.get("grader-prose", 0)
        with pytest.raises(ContenderError, match="malformed verdict.*3 attempts"):
            await judge(url, "grader-prose", http).grade(instance, Run("Exact Answer: 3%"))
        assert server.seen["grader-prose"] - before == 3

    async def test_one_bad_verdict_is_retried(self, judge_server, http, instance):
        grade = await judge(judge_server[0], "grader-flaky", http).grade(instance, Run("Exact Answer: 3%"))
        assert grade.correct

    async def test_a_milestone_that_does_not_exist_is_malformed(self, judge_server, http, instance):
        with pytest.raises(ContenderError, match="outside 1..10"):
            await judge(judge_server[0], "grader-outside", http).grade(instance, Run("Exact Answer: 3%"))

    async def test_a_server_error_is_not_retried_forever(self, judge_server, http, instance):
        with pytest.raises(ContenderError):
            await judge(judge_server[0], "error-500", http).grade(instance, Run("Exact Answer: 3%"))


class TestParseGrade:
    good = '{"extracted_final_answer": "x", "reasoning": "r", "correct": "no", "confidence": 50, "milestones_reached": [2]}'

    def test_good(self):
        grade = parse_grade(self.good, 3)
        assert grade.milestones == (False, True, False) and not grade.correct

    @pytest.mark.parametrize(
        "bad",
        [
            '{"extracted_final_answer": "x", "reasoning": "r", "correct": true, "confidence": 50}',
            '{"extracted_final_answer": "x", "reasoning": "r", "correct": "maybe", "confidence": 50}',
            '{"extracted_final_answer": "x", "reasoning": "r", "correct": "yes", "confidence": 150}',
            '{"extracted_final_answer": "x", "reasoning": "r", "correct": "yes", "confidence": 5, "milestones_reached": "1"}',
            'Sure! {"correct": "yes"}',
            "[1, 2]",
        ],
    )
    def test_strict(self, bad):
        with pytest.raises(MalformedVerdict):
            parse_grade(bad, 3)
