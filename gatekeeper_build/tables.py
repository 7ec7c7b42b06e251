"""The concept tables and place names as the fit packs them into `model.npz`.

`read_keywords` merges `data/cldr-keywords.tsv` and `data/omw-synsets.tsv`
(one `lang <TAB> word <TAB> concept...` a line; `concept_tables.py` writes
them) into the served `Keywords` arrays; `collect_places` keys the
gazetteer's names and WordNet's named places into the served `PlaceNames`
(the gazetteer takes seconds to build, so the server reads only the keys).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from arena.gatekeeper.alignment import UNSPACED
from arena.gatekeeper.features import words_of
from arena.gatekeeper.keywords import LONGEST_UNSPACED, Keywords, concept_key, entry, key_of, whole_hashes
from arena.gatekeeper.places import KINDS, MAX_WORDS, PlaceNames, name_keys, phrase_keys
from arena.gatekeeper.places import LONGEST_UNSPACED as LONGEST_UNSPACED_NAME
from arena.gatekeeper.places import UNSPACED as UNSPACED_NAME  # Hangul too: the gazetteer's scripts
from arena.geo.gazetteer import fold, load_gazetteer
from gatekeeper_build.corpus import DATA_DIR

KEYWORDS_PATH = DATA_DIR / "cldr-keywords.tsv"
SYNSETS_PATH = DATA_DIR / "omw-synsets.tsv"
WORDNET_PLACES_PATH = DATA_DIR / "wordnet-places.tsv"
# Each table, and whether its words are also found by their stems ("snowing" finds "snow"; among
# Wiktionary's 325,000 words a stem too often names something else).
TABLES = ((KEYWORDS_PATH, True), (SYNSETS_PATH, False))
# A gazetteer name is kept when its guess that a match of it is no chance hit is at least this: that
# leaves out single words under six letters ("Praia", "Mark", but also "Paris") and two-character
# Han names of small towns, which ordinary words too often are.
MIN_QUALITY = 0.5
# WordNet's names are kept by the gazetteer's rule too: no single word under six letters.
SHORTEST_WORD = 6


def read_keywords(tables: tuple[tuple[Path, bool], ...] = TABLES) -> Keywords:
    """The tables as one `Keywords`; a word in several tables names all their concepts."""
    named: dict[str, set[int]] = {}  # entry -> concepts
    stemmed: set[str] = set()
    for path, stems in tables:
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            try:
                lang, word, names = line.split("\t")
            except ValueError:
                raise ValueError(f"{path.name}:{number}: not 'lang<TAB>word<TAB>concept...'") from None
            named.setdefault(entry(word, lang), set()).update(concept_key(c) for c in names.split())
            if stems:
                stemmed.add(entry(word, lang))
    entries = sorted(named, key=key_of)
    keys = np.array([key_of(e) for e in entries], dtype=np.uint64)
    if len(np.unique(keys)) != len(keys):
        raise ValueError("two words share a 64-bit key: change keywords.word_keys")
    sizes = np.array([len(named[e]) for e in entries], dtype=np.int64)
    concepts = np.array([k for e in entries for k in sorted(named[e])], dtype=np.uint32)
    unspaced = [i for i, e in enumerate(entries) if UNSPACED.match(e) and len(e) <= LONGEST_UNSPACED]
    hashes = whole_hashes([entries[i] for i in unspaced])
    order = np.argsort(hashes, kind="stable")
    return Keywords(
        keys,
        np.concatenate([[0], np.cumsum(sizes)]),
        concepts,
        np.array([e in stemmed for e in entries], dtype=bool),
        hashes[order],
        np.array(unspaced, dtype=np.int64)[order],
    )


def table_words(tables: tuple[tuple[Path, bool], ...] = TABLES) -> Iterator[str]:
    """Every word (or two-word phrase) of the tables, as written (piece_table.py cuts them)."""
    for path, _ in tables:
        for line in path.read_text("utf-8").splitlines():
            yield line.split("\t")[1]


def collect_places() -> PlaceNames:
    """The gazetteer's names that are kept (MIN_QUALITY), of the most important place's kind (a
    country before a region, a city last); then WordNet's (`wordnet_names`) the gazetteer lacks."""
    gazetteer = [
        (name, KINDS.index(places[0].kind))
        for name, places, quality in load_gazetteer().names()
        if quality >= MIN_QUALITY
    ]
    spaced: dict[int, int] = {}
    unspaced: dict[str, int] = {}
    for name, kind in gazetteer + wordnet_names():
        if UNSPACED_NAME.match(name):
            if len(name) <= LONGEST_UNSPACED_NAME:
                unspaced.setdefault(name, kind)
        elif 1 <= len(words := words_of(name)) <= MAX_WORDS:
            spaced.setdefault(int(phrase_keys(name_keys(words), len(words))[0]), kind)
    by_hash: dict[int, int] = {}
    for key, kind in zip(whole_hashes(list(unspaced)).tolist(), unspaced.values(), strict=True):
        by_hash.setdefault(key, kind)
    return PlaceNames(*_sorted(spaced), *_sorted(by_hash))


def wordnet_names() -> list[tuple[str, int]]:
    """(folded name, kind) of each word of `omw-synsets.tsv` whose synsets all name a place of
    WordNet's (`wordnet-places.tsv`), in the kind of the first: "bodensee", "地中海", "ים המלח"."""
    kinds = dict(line.split("\t") for line in WORDNET_PLACES_PATH.read_text("utf-8").splitlines())
    names = []
    for line in SYNSETS_PATH.read_text("utf-8").splitlines():
        _, word, synsets = line.split("\t")
        senses = synsets.split(" ")
        if all(s in kinds for s in senses) and _kept(name := fold(word)):
            names.append((name, KINDS.index(kinds[senses[0]])))
    return names


def _kept(name: str) -> bool:
    """A name of WordNet's is kept as the gazetteer keeps its own: not a single word under
    SHORTEST_WORD letters; and a name in a script without spaces is one run (no space in it)."""
    if UNSPACED_NAME.match(name):
        return " " not in name
    return " " in name or len(name) >= SHORTEST_WORD


def _sorted(table: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    keys = np.array(sorted(table), dtype=np.uint64)
    return keys, np.array([table[int(k)] for k in keys], dtype=np.uint8)
