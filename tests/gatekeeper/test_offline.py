"""The offline gatekeeper on its shipped, labelled prompt set."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources

import pytest

from arena.gatekeeper.lexicon import concept_tokens
from arena.gatekeeper.offline import (
    LANGUAGES,
    held_out,
    held_out_accuracy,
    load_dataset,
    shared_classifier,
)

MIN_HELD_OUT_ACCURACY = 0.95


class TestDataset:
    def test_every_language_has_enough_of_both_labels(self) -> None:
        counts = Counter((r.lang, r.geographic) for r in load_dataset())
        for lang in LANGUAGES:
            assert counts[(lang, True)] >= 150, lang
            assert counts[(lang, False)] >= 150, lang
        assert sum(counts.values()) >= 3000

    def test_files_are_plain_jsonl_without_duplicates(self) -> None:
        folder = resources.files("arena.gatekeeper") / "data"
        names = sorted(e.name for e in folder.iterdir())
        assert names == sorted(f"{lang}.jsonl" for lang in LANGUAGES)  # data only, no pickles
        prompts = [" ".join(r.prompt.lower().split()) for r in load_dataset()]
        assert len(prompts) == len(set(prompts))
        for entry in folder.iterdir():
            for line in entry.read_text("utf-8").splitlines():
                assert set(json.loads(line)) == {"prompt", "geographic", "lang"}

    def test_split_is_stable_and_about_one_fifth(self) -> None:
        rows = load_dataset()
        share = sum(r.held_out for r in rows) / len(rows)
        assert 0.15 < share < 0.25
        # The hash of the text decides, so the side never changes between runs.
        assert held_out("Where was this photo taken?") == held_out("  where was this   PHOTO taken? ")
        assert [held_out(r.prompt) for r in rows[:50]] == [r.held_out for r in rows[:50]]


class TestHeldOutAccuracy:
    def test_each_language_is_at_least_95_percent(self) -> None:
        classifier = shared_classifier()
        report = held_out_accuracy(classifier)
        lines = [f"{lang}: {e['accuracy']:.3f} ({e['correct']}/{e['n']})" for lang, e in sorted(report.items())]
        print("\noffline gatekeeper, held-out accuracy per language:\n  " + "\n  ".join(lines))
        assert set(report) == set(LANGUAGES)
        low = {lang: e for lang, e in report.items() if e["accuracy"] < MIN_HELD_OUT_ACCURACY}
        assert not low, "below 95%: " + "; ".join(f"{lang} {e['accuracy']:.3f} misses {e['misses']}"
                                                  for lang, e in low.items())

    def test_trained_only_on_the_training_side(self) -> None:
        rows = load_dataset()
        assert shared_classifier().trained_on == sum(not r.held_out for r in rows)

    @pytest.mark.parametrize(
        ("prompt", "geographic"),
        [
            ("which side of the road do they drive on here?", True),
            ("What climate zone is this?", True),
            ("Какой это город?", True),
            ("この写真はどこで撮影されましたか", True),
            ("describe the painting's style", False),
            ("solve the equation in this photo", False),
            ("这只狗是什么品种", False),
            ("¿Dónde puedo comprar estas zapatillas?", False),
        ],
    )
    def test_examples_from_the_issue(self, prompt: str, geographic: bool) -> None:
        # Phrasings chosen for this test, not copied from the data set.
        score = shared_classifier().score(prompt)
        assert (score >= 0.5) == geographic, score

    def test_language_is_recognised_for_the_refusal(self) -> None:
        classifier = shared_classifier()
        assert classifier.language("Quelle est la recette de ce gâteau ?") == "fr"
        assert classifier.language("이 고양이 이름 지어 줘") == "ko"
        assert classifier.language("Wie alt ist dieser Hund?") == "de"


class TestLexicon:
    def test_concepts_cross_languages(self) -> None:
        for text in ("which island is this?", "что это за остров?", "这是哪个岛？", "これは何という島？"):
            assert "geo_water" in concept_tokens(text), text

    def test_places_match_whole_words_and_declensions(self) -> None:
        assert "geo_placename" in concept_tokens("is this in japan?")
        assert "geo_placename" in concept_tokens("это в германии?")  # Германия, declined
        assert "geo_placename" in concept_tokens("서울이에요?")  # Seoul + particle
        assert "geo_placename" not in concept_tokens("シリアル番号を読んで")  # not Syria (シリア)
        assert "other_animal" not in concept_tokens("where is the cathedral?")  # "cat" is a whole word
