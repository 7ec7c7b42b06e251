"""The prompt-language guess that words the gatekeeper's refusal and picks the
concept tables' language (arena.geo.language)."""

from __future__ import annotations

import pytest

from arena.gatekeeper.policy import REFUSALS
from arena.geo.language import PROFILED, Profiles, guess_language, shipped_profiles


def test_every_refusal_is_recognised_as_its_own_language() -> None:
    assert {lang: guess_language(text) for lang, text in REFUSALS.items()} == {lang: lang for lang in REFUSALS}


@pytest.mark.parametrize(
    ("prompt", "language"),
    [
        # no letter only one of the two uses: the profiles decide (each was "ru" before they did)
        ("Ти можеш ходити?", "uk"),
        ("А ти розумний?", "uk"),
        ("Коли ти будеш битися?", "uk"),
        ("Ты можешь ходить?", "ru"),
        ("Где сделана фотография?", "ru"),
        # a letter settles it
        ("Де знаходиться ця вулиця?", "uk"),
        ("Это где?", "ru"),
    ],
)
def test_russian_and_ukrainian_are_told_apart(prompt: str, language: str) -> None:
    assert guess_language(prompt) == language


def test_the_shipped_profiles_cover_the_languages_they_decide() -> None:
    assert set(shipped_profiles().languages) == set(PROFILED)


def test_profiles_can_be_given() -> None:
    # two made-up profiles: the same text goes whichever way the profiles say
    def toy(favoured: str) -> Profiles:
        grams = {"в": -1.0, "а": -1.0, "ва": -1.0}  # Cyrillic
        return Profiles.of({lang: {"floor": -9.0, "grams": grams if lang == favoured else {}} for lang in PROFILED})

    assert guess_language("Ва ва", toy("uk")) == "uk"
    assert guess_language("Ва ва", toy("ru")) == "ru"
