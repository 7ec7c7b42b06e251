"""The policy's two questions (facets.py), each a head of the offline model:
is the photo in play, and is the question about a place?"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from arena.gatekeeper.features import DIMENSIONS
from arena.gatekeeper.model import shipped_model
from gatekeeper_build.corpus import LabelledPrompt, load_dataset
from gatekeeper_build.facets import LABEL, PHOTO, PLACE, POLICY, facets_of, row_answers, row_key
from gatekeeper_build.fitting import (
    HARD_NEGATIVE_WEIGHT,
    balanced_weights,
    evidence_scale,
    fit_model,
    settled_elsewhere,
)


class TestSources:
    def test_every_row_s_facets_agree_with_its_label(self) -> None:
        answered = Counter()
        for row in load_dataset():
            photo, place = facets_of(row)  # KeyError for a source with no facets
            if row.geographic:
                assert photo is True and place is True, row
            elif photo is not None and place is not None:
                assert not (photo and place), row
            answered[(photo is not None, place is not None)] += 1
        # the rows answered one by one leave a facet open only where the reader could not tell
        assert answered[(False, False)] == 0
        assert answered[(True, True)] > 0.9 * len(load_dataset())

    def test_row_answers_name_shipped_rows_and_only_fill_what_their_source_leaves_open(self) -> None:
        rows = load_dataset()
        groups = {r.group for r in rows}
        keys = {row_key(r.lang, r.source, r.prompt) for r in rows}
        for key in row_answers():
            assert key in groups or key in keys, f"{key!r} names no row of data/prompts (stale after a collect?)"
        for r in rows:
            by_source = facets_of(dataclasses.replace(r, group="", prompt="\x00"))  # no line names it
            for own, known in zip(facets_of(r), by_source, strict=True):
                assert known is None or own == known, r

    def test_the_first_arena_s_refusals_teach_both_heads(self) -> None:
        v1 = [facets_of(r) for r in load_dataset() if r.source == "geoarena-v1:not-geo"]
        assert Counter(v1)[(True, False)] > 0.8 * len(v1)  # mostly about a photo, not its place
        assert Counter(v1)[(False, True)] > 0  # a few quizzes

    def test_an_unknown_source_is_named(self) -> None:
        with pytest.raises(KeyError, match="somewhere:new"):
            facets_of(LabelledPrompt("Where is this?", True, "en", "somewhere:new"))

    def test_place_questions_in_chat_are_left_to_the_photo_head_unless_read(self) -> None:
        unread = LabelledPrompt("What is the capital of Peru?", False, "en", "chatterbot-corpus:trivia")
        food = LabelledPrompt("Do you like pizza?", False, "en", "chatterbot-corpus:food")
        assert facets_of(unread) == (False, None) and facets_of(food) == (False, False)
        read = [facets_of(r) for r in load_dataset() if r.source == "chatterbot-corpus:trivia"]
        assert (False, True) in read and (False, False) in read


def row(prompt: str, photo: bool, place: bool) -> LabelledPrompt:
    source = {
        (True, True): "geoarena-authored:geo-location",
        (True, False): "geoarena-authored:not-geo-photo",
        (False, True): "geoarena-authored:quiz",
        (False, False): "geoarena-authored:not-geo-other",
    }[(photo, place)]
    return LabelledPrompt(prompt, photo and place, "en", source)


class TestHeads:
    def test_a_prompt_is_taken_only_when_both_heads_take_it(self) -> None:
        rows = [
            row("which country is in this photo", True, True),
            row("which city is in the picture", True, True),
            row("what breed is the dog in this photo", True, False),
            row("how many cats are in the picture", True, False),
            row("what is the capital city of peru", False, True),
            row("which country borders chile", False, True),
            row("tell me a joke about cats", False, False),
            row("write a poem about a dog", False, False),
        ]
        model = fit_model(rows, None, facets=POLICY)
        assert [head.name for head in model.heads] == ["photo", "place"]
        logits = model.logits("which city is in this photo")
        assert logits["photo"] > 0 and logits["place"] > 0 and model.score("which city is in this photo") > 0.5
        dog = model.logits("what dog is in this photo")
        assert dog["photo"] > 0 > dog["place"] and model.score("what dog is in this photo") < 0.5
        quiz = model.logits("which country borders peru")
        assert quiz["place"] > 0 > quiz["photo"] and model.score("which country borders peru") < 0.5

    def test_one_head_learns_the_label(self) -> None:
        rows = [row("which country is in this photo", True, True), row("tell me a joke", False, False)]
        model = fit_model(rows, None, facets=(LABEL,))
        assert [head.name for head in model.heads] == ["geographic"]
        assert model.score("which country is in this photo") > 0.5 > model.score("tell me a joke")


class TestSettledElsewhere:
    def test_a_row_only_the_other_head_refuses_is_settled_there(self) -> None:
        rows = [
            row("which country is in this photo", True, True),
            row("what breed is the dog in this photo", True, False),
            row("what is the capital city of peru", False, True),
            row("tell me a joke about cats", False, False),
        ]
        # a quiz is a place question the photo head refuses; a dog's breed, a photo question the place head refuses
        assert settled_elsewhere(rows, PLACE, POLICY).tolist() == [False, False, True, False]
        assert settled_elsewhere(rows, PHOTO, POLICY).tolist() == [False, True, False, False]
        assert not settled_elsewhere(rows, LABEL, (LABEL,)).any()  # one head: nothing is settled elsewhere

    def test_a_settled_row_weighs_less_in_the_head_it_does_not_decide(self) -> None:
        rows = [row("which city is in this photo", True, True), row("which city is the capital of peru", False, True)]
        rows += [row("tell me a joke", False, False)]
        quiz = "which city is the capital of peru"
        both = fit_model(rows, None, facets=POLICY).logits(quiz)
        alone = fit_model(rows, None, facets=(PLACE,)).logits(quiz)  # no photo head to settle the quiz
        assert both["photo"] < 0 and 0 < both["place"] < alone["place"] - 0.5


class TestWeights:
    def test_each_language_and_label_weighs_the_same_and_inside_it_each_row(self) -> None:
        rows = [LabelledPrompt(f"where is this {i}", True, "de", "geoarena-v1:geo") for i in range(6)]
        rows += [LabelledPrompt("wo ist das?", True, "de", "geoarena-authored:geo-location")]
        rows += [LabelledPrompt(f"joke {i}", False, "de", "chatterbot-corpus:humor") for i in range(3)]
        rows += [LabelledPrompt("what breed is this dog?", False, "de", "xgqa:dev")]
        rows += [LabelledPrompt("where is this?", True, "sw", "geoarena-v1:geo")]
        rows += [LabelledPrompt(f"code {i}", False, "sw", "mhumaneval:task") for i in range(4)]
        w = balanced_weights(rows)
        cell = {
            key: sum(w[i] for i, r in enumerate(rows) if (r.lang, r.geographic) == key)
            for key in [("de", True), ("de", False), ("sw", True), ("sw", False)]
        }
        assert max(cell.values()) == pytest.approx(min(cell.values()))
        # a big source's row weighs what a small one's does: six v1 rows are six times one authored row
        assert w[0] == pytest.approx(w[6])
        assert w[10] == pytest.approx(HARD_NEGATIVE_WEIGHT * w[7])  # a photo refusal counts more than chat
        assert w.sum() == pytest.approx(len(rows))


class TestEvidence:
    def test_a_telling_n_gram_is_scaled_up_and_one_on_both_sides_is_not(self) -> None:
        import scipy.sparse as sp

        # columns: on the yes side only, on both sides alike, never seen; then two dense dimensions
        x = sp.hstack(
            [
                sp.csr_matrix(
                    ([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], ([0, 1, 0, 1, 2, 3], [0, 0, 1, 1, 1, 1])), (4, DIMENSIONS)
                ),
                sp.csr_matrix(np.ones((4, 2))),
            ]
        ).tocsr()
        scale = evidence_scale(x, np.array([True, True, False, False]), np.ones(4))
        assert scale.shape == (DIMENSIONS + 2,)
        assert scale[0] > 2.0  # log((2 + s) / (0 + s)) with the smoothing s, plus one
        assert scale[1] == pytest.approx(1.0, abs=0.01) and scale[2] == pytest.approx(1.0, abs=0.01)
        assert np.all(scale[DIMENSIONS:] == 1.0)  # the piece vector's dimensions are left as they are


class TestShippedHeads:
    @pytest.mark.parametrize(
        ("prompt", "photo", "place"),
        [
            ("Which country is this street in?", True, True),
            ("What is the capital of France?", False, True),
            ("What breed is this dog?", True, False),
            ("Write a Python function that reverses a list.", False, False),
            ("Welche Sprache spricht man in diesem Dorf auf dem Foto?", True, True),
            ("Was ist die Hauptstadt von Frankreich?", False, True),
        ],
    )
    def test_each_head_answers_its_own_question(self, prompt: str, photo: bool, place: bool) -> None:
        logits = shipped_model().logits(prompt)
        assert (logits[PHOTO.name] > 0, logits[PLACE.name] > 0) == (photo, place), logits
