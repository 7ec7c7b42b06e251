"""`build places`: which of WordNet's named instances are places, read from WordNet's own file format."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatekeeper_build import concept_tables
from gatekeeper_build.tables import WORDNET_PLACES_PATH

# lexnames and data.noun as WordNet 3.0 writes them: offset, lexicographer file, "n", the number of
# words (hex), each word with its lex id, the number of pointers, each pointer as symbol, target,
# part of speech and source/target, then the gloss. The offsets of the roots are WordNet's own.
LEXNAMES = "03\tnoun.Tops\t1\n06\tnoun.artifact\t1\n15\tnoun.location\t1\n17\tnoun.object\t1\n18\tnoun.person\t1\n"
SYNSETS = [
    ("00001740", "03", ["entity"], []),
    ("00027167", "03", ["location"], [("@", "00001740")]),
    ("09225146", "17", ["body_of_water", "water"], [("@", "00001740")]),
    ("09328904", "17", ["lake"], [("@", "09225146")]),
    ("09252766", "17", ["Lake_Constance", "Bodensee"], [("@i", "09328904")]),
    ("09360122", "17", ["mountain_peak"], [("@", "00027167")]),
    ("09187204", "17", ["Aconcagua"], [("@i", "09360122")]),
    ("09239740", "17", ["celestial_body"], [("@", "00001740")]),
    ("09444100", "17", ["star"], [("@", "09239740")]),
    ("09199000", "17", ["Betelgeuse"], [("@i", "09444100")]),
    ("04341686", "06", ["structure", "construction"], [("@", "00001740")]),
    ("03302121", "06", ["Eiffel_Tower"], [("@i", "04341686")]),
    ("04194289", "06", ["ship"], [("@", "00001740")]),
    ("04457000", "06", ["Titanic"], [("@i", "04194289")]),
    ("08793914", "15", ["Middle_East", "Mideast"], [("@i", "00027167")]),
    ("11081000", "18", ["Lincoln", "Abraham_Lincoln"], [("@", "00001740")]),
    ("11082000", "18", ["Galileo"], [("@i", "00001740")]),
]


def _data_noun() -> str:
    head = "  1 This software and database is being provided to you, the LICENSEE, by  \n"
    lines = []
    for offset, lexfile, words, pointers in SYNSETS:
        named = " ".join(f"{w} 0" for w in words)
        pointed = " ".join(f"{symbol} {target} n 0000" for symbol, target in pointers)
        lines.append(f"{offset} {lexfile} n {len(words):02x} {named} {len(pointers):03d} {pointed} | a gloss  ")
    return head + "\r\n".join(lines) + "\r\n"  # WordNet's files end their lines in CRLF


@pytest.fixture
def wordnet(tmp_path: Path) -> Path:
    (tmp_path / "lexnames").write_text(LEXNAMES)
    (tmp_path / "data.noun").write_text(_data_noun())
    (tmp_path / "LICENSE").write_text("WordNet Release 3.0\nWordNet 3.0 Copyright 2006 by Princeton University.\n")
    return tmp_path


def test_named_places_are_the_instances_of_locations_geography_and_structures(
    wordnet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out" / WORDNET_PLACES_PATH.name
    out.parent.mkdir()
    monkeypatch.setattr(concept_tables, "WORDNET_PLACES_PATH", out)
    assert concept_tables.write_wordnet_places(wordnet) == 4
    assert out.read_text() == (
        "03302121-n\tlandmark\n"  # the Eiffel Tower: a structure
        "08793914-n\tregion\n"  # the Middle East: a location
        "09187204-n\tnature\n"  # Aconcagua: a peak, under location
        "09252766-n\tnature\n"  # Lake Constance: a body of water
    )  # not Betelgeuse (a star), the Titanic (a ship), Galileo (a person), nor any kind ("lake")
    assert "Princeton University" in out.with_suffix(".LICENSE").read_text()


def test_the_shipped_table_names_lakes_and_seas() -> None:
    kinds = dict(line.split("\t") for line in WORDNET_PLACES_PATH.read_text().splitlines())
    assert kinds["09252766-n"] == "nature" and kinds["09350045-n"] == "nature"  # Lake Constance, the Mediterranean
    assert set(kinds.values()) == {"region", "nature", "landmark"} and len(kinds) > 3_000
