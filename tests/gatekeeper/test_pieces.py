"""The pieces: the served tokeniser reads the sentencepiece model the build writes; the build's
piece vectors, their storage and their fold into one weight a piece."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arena.gatekeeper.pieces import Tokeniser
from gatekeeper_build.corpus import LabelledPrompt, load_dataset
from gatekeeper_build.facets import LABEL
from gatekeeper_build.fitting import fit_model
from gatekeeper_build.vectors import (
    META,
    PieceVectors,
    four_bits,
    from_four_bits,
    mean_vectors,
    pack,
    sif_weights,
    unpack,
    write_unigram_model,
)


def _tokeniser(scored: dict[str, float], path: Path) -> Tokeniser:
    write_unigram_model(list(scored), np.array(list(scored.values()), dtype=np.float32), path / "t.model")
    return Tokeniser(path / "t.model")


class TestTokeniser:
    def test_the_cut_is_the_most_probable_one(self, tmp_path: Path) -> None:
        scored = {f"{META}where": -3.0, f"{META}wh": -2.0, "ere": -2.0, f"{META}is": -1.0, "is": -4.0}
        tokeniser = _tokeniser(scored, tmp_path)
        pieces = list(scored)
        # "▁where" alone (-3) beats "▁wh" + "ere" (-4)
        assert [pieces[k] for k in tokeniser.ids("where is")] == [f"{META}where", f"{META}is"]

    def test_a_character_no_piece_covers_is_skipped(self, tmp_path: Path) -> None:
        tokeniser = _tokeniser({f"{META}a": -1.0, "b": -1.0}, tmp_path)
        assert tokeniser.ids("ab€") == [0, 1]

    def test_a_prompt_is_normalised_and_split_at_any_space(self, tmp_path: Path) -> None:
        tokeniser = _tokeniser({f"{META}a": -1.0, f"{META}b": -1.0}, tmp_path)
        assert tokeniser.ids("  a\n\tb ") == tokeniser.ids("a b") == [0, 1] == tokeniser.ids("ａ ｂ")  # NFKC


class TestStorage:
    def test_four_bits_keep_each_component_within_half_a_step(self) -> None:
        vectors = np.random.default_rng(3).normal(size=(40, 6)).astype(np.float32)
        vectors[:, 5] = 0  # a component that is zero everywhere stays zero
        stored = four_bits(vectors)
        assert stored["vectors"].dtype == np.uint8 and stored["vectors"].shape == (40, 3)
        back = from_four_bits(stored["vectors"], stored["scale"])
        assert np.all(np.abs(back - vectors) <= stored["scale"] / 2 + 1e-6)
        assert np.all(back[:, 5] == 0)

    def test_strings_round_trip_as_arrays(self) -> None:
        pieces = (f"{META}Straße", "照片", "ภาพ", "")
        assert unpack(**pack(pieces)) == pieces


class TestShippedPieces:
    def test_every_prompt_is_cut_into_known_pieces(self) -> None:
        tokeniser = Tokeniser()  # the served one
        assert all(tokeniser.ids(row.prompt) for row in load_dataset()[::50])

    @pytest.mark.parametrize(
        "word",
        ["Bergwanderungsparkplatz", "ngôi làng ven biển", "ภูเขาไฟฟูจิซัง", "Kilimanjaroooo", "地理位置推断"],
    )
    def test_a_word_no_prompt_has_is_still_cut_into_known_pieces(self, word: str) -> None:
        assert not any(word in row.prompt for row in load_dataset())
        table = PieceVectors.read()
        cut = Tokeniser().ids(word)
        assert "".join(table.pieces[k] for k in cut) == META + word.replace(" ", META)  # nothing skipped


class TestFit:
    def test_pieces_carry_a_label_to_words_no_training_prompt_has(self, tmp_path: Path) -> None:
        # Two directions: the geographic pieces' and the others'. The training prompts are
        # English; the Russian words share no n-gram with them, only their pieces' vectors.
        direction = {
            f"{META}where": (1, 0),
            f"{META}photo": (1, 0),
            f"{META}фото": (1, 0),
            f"{META}joke": (0, 1),
            f"{META}code": (0, 1),
            f"{META}шутка": (0, 1),
            f"{META}this": (0.3, 0.3),
        }
        pieces = PieceVectors(
            tuple(direction), np.full(len(direction), -5, np.float32), np.array(list(direction.values()), np.float32)
        )
        geographic = ("where is this photo", "this photo where", "photo where")
        rows = [LabelledPrompt(p, True, "en", "geo") for p in geographic]
        rows += [LabelledPrompt(p, False, "en", "other") for p in ("this joke", "code this", "joke code")]
        with_pieces = fit_model(rows, None, pieces, facets=(LABEL,), pieces_model=tmp_path / "p.model")
        without = fit_model(rows, None, facets=(LABEL,))
        # each word's pieces push its logit from the bias (a prompt with nothing known) towards its label
        photo, joke = (with_pieces.logits(word)["geographic"] for word in ("фото", "шутка"))
        assert photo > with_pieces.heads[0].bias > joke and photo - joke > 0.1
        assert abs(without.score("фото") - without.score("шутка")) < 0.05  # n-grams alone cannot tell them apart

    def test_the_folded_weights_give_the_mean_vector_times_its_weights(self) -> None:
        rng = np.random.default_rng(7)
        vectors = rng.normal(size=(50, 8)).astype(np.float32)
        cuts = [list(rng.integers(0, 50, size=rng.integers(1, 9))) for _ in range(20)]
        sif = sif_weights(cuts, 50)
        block_weights = rng.normal(size=8)
        folded = sif * (vectors @ block_weights)
        direct = mean_vectors(cuts, vectors, sif) @ block_weights
        assert np.allclose([folded[cut].sum() / len(cut) for cut in cuts], direct, atol=1e-5)
