"""The offline gatekeeper's features: hashed character and word n-grams.

Pure Python and numpy, so the server needs no scikit-learn to score a
prompt and the fitted model is a plain array of weights. Character n-grams
(1 to 4, inside words padded with spaces) need no tokeniser, so Thai,
Chinese and Japanese work like Swedish; word unigrams and bigrams carry
phrases ("tell me", "this photo"); with an alignment (alignment.py) each
token also carries the concept it shares with its translations in other
languages, and with the concept tables (keywords.py) each word that names
an emoji (CLDR) or a WordNet synset (Wiktionary) carries it; two aligned
tokens near each other also carry their pair of concepts, a phrase that
crosses languages; with the place names (places.py), the name of a country,
region or city carries the concept "a place", which pairs as well. Every
n-gram is hashed (a polynomial hash of code points, CRC-32 for words:
stable across processes, unlike `hash`) into
`DIMENSIONS` buckets; a prompt's vector is binary and L2-normalised, so a
prompt stuffed with place words gets no more weight than one that names a
single place.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from itertools import pairwise

import numpy as np

from arena.gatekeeper.alignment import Alignment, token_key, tokens
from arena.gatekeeper.keywords import POLY_PRIME, Keywords
from arena.gatekeeper.places import PlaceNames
from arena.geo.language import guess_language

# The training prompts' n-grams and concepts fill some 496,000 of these 2**20 buckets, more than 2**18
# could keep apart; fewer collisions pay (held out by source: 0.9623 with 2**18 buckets, 0.9631 with
# 2**20; the real sources 0.9500 and 0.9514), and a verdict's bitmap is still a fraction of a millisecond.
DIMENSIONS = 1 << 20
CHAR_NGRAMS = (1, 2, 3, 4)
# A keyword's emoji or a word's synset fills this many buckets: the L2 penalty then favours these
# features, shared by all thirty languages, over one language's own n-grams (held out by source, with
# both tables: 0.881 with three buckets, 0.886 with six, 0.887 with ten, which cost more time a verdict).
KEYWORD_BUCKETS = 6
MAX_CHARS = 4000  # the arena's prompts stop at 2,000; a CLI file line may be longer


def _marks() -> str:
    """A character class of the combining marks: Python's \\w leaves them out, which would cut
    Hindi "बारिश" or Thai "ที่" into pieces at every vowel sign."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x300, 0x10000):
        if unicodedata.category(chr(code)) in ("Mn", "Mc", "Me"):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    return "".join(f"{chr(a)}-{chr(b)}" if b > a else chr(a) for a, b in ranges)


_WORD = re.compile(rf"[\w{_marks()}]+")
_MASK = DIMENSIONS - 1


def normalise(text: str) -> str:
    """NFKC, lower case, one space between words."""
    return " ".join(unicodedata.normalize("NFKC", text[:MAX_CHARS]).lower().split())


def words_of(text: str) -> list[str]:
    return _WORD.findall(normalise(text))


def feature_indices(
    text: str,
    alignment: Alignment | None = None,
    keywords: Keywords | None = None,
    lang: str | None = None,
    places: PlaceNames | None = None,
) -> np.ndarray:
    """The sorted, distinct buckets of one prompt's n-grams, and of the cross-lingual
    concepts its tokens carry when an `alignment` (alignment.py) or CLDR's `keywords`
    (keywords.py) are given; with an alignment, the `places` (places.py) it names too."""
    words = words_of(text)
    if not words:
        return np.zeros(0, dtype=np.int64)
    # Character n-grams of " word word ... ", hashed with numpy: a prompt of 2,000
    # characters has some 8,000 of them, too many to hash one by one in Python.
    # Each word is padded with its own spaces (" one  two "); an n-gram across the
    # double space between two words is dropped, so every n-gram lies inside one word.
    codes = np.frombuffer(f" {'  '.join(words)} ".encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    seam = np.concatenate([[0], np.cumsum((codes[:-1] == 32) & (codes[1:] == 32))])
    parts = []
    h = np.zeros(len(codes), dtype=np.uint64)
    for n in range(1, max(CHAR_NGRAMS) + 1):
        if len(codes) < n:
            break
        h = h[: len(codes) - n + 1] * POLY_PRIME + codes[n - 1 :]
        if n in CHAR_NGRAMS:
            inside = seam[n - 1 :] == seam[: len(codes) - n + 1]
            parts.append(_mix(h[inside] + np.uint64(n)))
    crc = zlib.crc32
    grams = ["w\x00" + w for w in words] + [f"b\x00{a}\x00{b}" for a, b in pairwise(words)]
    parts.append(np.fromiter((crc(t.encode("utf-8")) for t in grams), dtype=np.uint64, count=len(grams)))
    if alignment is not None and len(alignment):  # one more feature per token with a cross-lingual concept
        keys = np.fromiter((token_key(t) for t in tokens(words)), dtype=np.uint32)
        positions, concepts = alignment.found(keys)
        parts.append(concepts.astype(np.uint64))
        if places is not None:  # a place's name is a concept too, "a place", beside its tokens' own
            at, kinds = places.find(words)
            if len(at):
                parts.append(_place_features(kinds))
                positions = np.concatenate([positions, at])
                concepts = np.concatenate([concepts, np.full(len(at), PLACE_CONCEPT, dtype=np.uint32)])
                order = np.argsort(positions, kind="stable")
                positions, concepts = positions[order], concepts[order]
        parts.append(concept_pairs(positions, concepts))
    if keywords is not None:  # each emoji or synset a word names in the prompt's language, in KEYWORD_BUCKETS buckets
        lang = guess_language(text) if lang is None else lang
        named = keywords.lookup(words, lang).astype(np.uint64) * np.uint64(KEYWORD_BUCKETS)
        parts.append(_mix((named[:, None] + np.arange(KEYWORD_BUCKETS, dtype=np.uint64)).ravel()))
    # Distinct and sorted through a bitmap: faster than sorting the 10,000-20,000 buckets of a long prompt.
    found = np.zeros(DIMENSIONS, dtype=bool)
    found[(np.concatenate(parts) & np.uint64(_MASK)).astype(np.intp)] = True
    return np.flatnonzero(found)


# Two concepts at most this many tokens apart carry one more feature, the unordered pair: a phrase
# ("this" + "town", "on" + "map") that every translation of it shares, whatever the word order.
# Held out by source: 0.9592 without, 0.9618 with pairs up to 3 apart (the same up to 5).
CONCEPT_PAIR_WINDOW = 3
_PAIR_SALT = np.uint64(7)  # an offset of this family of hashes, as the character n-grams add their length
_PLACE_SALT = np.uint64(11)


def concept_pairs(positions: np.ndarray, concepts: np.ndarray) -> np.ndarray:
    """A hash for each unordered pair of concepts whose tokens are at most CONCEPT_PAIR_WINDOW apart."""
    c = concepts.astype(np.uint64)
    parts = [np.zeros(0, np.uint64)]
    for d in range(1, min(CONCEPT_PAIR_WINDOW, len(c) - 1) + 1):  # the pairs d concepts apart
        near = positions[d:] - positions[:-d] <= CONCEPT_PAIR_WINDOW
        a, b = c[:-d][near], c[d:][near]
        parts.append(_mix(np.minimum(a, b) * POLY_PRIME + np.maximum(a, b) + _PAIR_SALT))
    return np.concatenate(parts)


PLACE_CONCEPT = zlib.crc32(b"p\x00place")  # of every place name (places.py), whatever its language
PLACE_BUCKETS = 3


def _place_features(kinds: np.ndarray) -> np.ndarray:
    """A prompt that names a place, and one that names a country (region, city): each in
    PLACE_BUCKETS buckets, as the keywords' concepts fill more than one."""
    named = np.concatenate([np.zeros(1, np.uint64), 1 + np.unique(kinds).astype(np.uint64)]) + np.uint64(PLACE_CONCEPT)
    named *= np.uint64(PLACE_BUCKETS)
    return _mix((named[:, None] + np.arange(PLACE_BUCKETS, dtype=np.uint64)).ravel() + _PLACE_SALT)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads a polynomial hash over all 64 bits."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.asarray(h ^ (h >> np.uint64(31)))
