"""The cross-lingual concept tables (keywords.py says what they are for), made from public data:
`data/cldr-keywords.tsv` from CLDR's emoji annotations and `data/omw-synsets.tsv` from the
Open Multilingual Wordnet's Wiktionary wordnets; and `data/wordnet-places.tsv`, which of those
synsets name a place (places.py), from Princeton WordNet 3.0. Each has its licence beside it."""

from __future__ import annotations

import json
from pathlib import Path

from arena.gatekeeper.features import normalise, words_of
from arena.gatekeeper.policy import LANGUAGES
from gatekeeper_build.sources import git_show
from gatekeeper_build.tables import KEYWORDS_PATH, SYNSETS_PATH, WORDNET_PLACES_PATH

# CLDR's locale for each of the gatekeeper's languages, where the two differ
CLDR_LOCALES = {"tl": "fil"}


def write_keywords(gitdir: Path) -> int:
    """`lang<TAB>keyword<TAB>emoji...` for every single-word keyword of CLDR's emoji
    annotations in each language (sorted: the same checkout gives the same file),
    and CLDR's licence beside it."""
    lines = []
    for lang in LANGUAGES:
        locale = CLDR_LOCALES.get(lang, lang)
        path = f"cldr-json/cldr-annotations-full/annotations/{locale}/annotations.json"
        annotations = json.loads(git_show(gitdir, path))["annotations"]["annotations"]
        named: dict[str, set[str]] = {}
        for emoji, names in annotations.items():
            for keyword in names.get("default", []) + names.get("tts", []):
                words = words_of(normalise(keyword))
                if len(words) == 1 and not words[0].isdigit():
                    named.setdefault(words[0], set()).add(emoji)
        lines += [f"{lang}\t{word}\t{' '.join(sorted(emoji))}" for word, emoji in sorted(named.items())]
    KEYWORDS_PATH.write_text("\n".join(lines) + "\n", encoding="utf-8")
    KEYWORDS_PATH.with_suffix(".LICENSE").write_text(git_show(gitdir, "LICENSE"), encoding="utf-8")
    return len(lines)


# The Open Multilingual Wordnet's code for each of the gatekeeper's languages
OMW_CODES = {
    "ar": "arb", "bn": "ben", "cs": "ces", "de": "deu", "el": "ell", "en": "eng", "es": "spa", "fa": "fas",
    "fr": "fra", "he": "heb", "hi": "hin", "hu": "hun", "id": "ind", "it": "ita", "ja": "jpn", "ko": "kor",
    "ms": "zsm", "nl": "nld", "pl": "pol", "pt": "por", "ro": "ron", "ru": "rus", "sv": "swe", "sw": "swa",
    "th": "tha", "tl": "tgl", "tr": "tur", "uk": "ukr", "vi": "vie", "zh": "cmn",
}  # fmt: skip
SYNSETS_PER_WORD = 4  # a word's senses named in the most languages; "set" has dozens
SYNSET_LANGUAGES = 2  # a synset named in one language only ties nothing across languages


def write_synsets(gitdir: Path) -> int:
    """`lang<TAB>word<TAB>synset...` for every lemma of one or two words in the Wiktionary
    wordnet of each language (`wns/wikt/wn-wikt-<code>.tab`, Bond and Foster 2013), keeping
    synsets named in at least SYNSET_LANGUAGES of the 30 and, per word, the
    SYNSETS_PER_WORD named in the most; sorted, so the same checkout gives the same file.
    Its licence and citation are written beside it."""
    senses: dict[tuple[str, str], set[str]] = {}
    named_in: dict[str, set[str]] = {}
    for lang in LANGUAGES:
        for line in git_show(gitdir, f"wns/wikt/wn-wikt-{OMW_CODES[lang]}.tab").splitlines():
            synset, kind, lemma = (line.split("\t") + ["", ""])[:3]
            if not kind.endswith(":lemma"):
                continue  # the header, and any other relation
            words = words_of(normalise(lemma))
            if not 1 <= len(words) <= 2 or any(w.isdigit() for w in words):
                continue
            senses.setdefault((lang, " ".join(words)), set()).add(synset)
            named_in.setdefault(synset, set()).add(lang)
    lines = []
    for (lang, word), synsets in sorted(senses.items()):
        shared = sorted(
            (s for s in synsets if len(named_in[s]) >= SYNSET_LANGUAGES), key=lambda s: (-len(named_in[s]), s)
        )
        if shared:
            lines.append(f"{lang}\t{word}\t{' '.join(sorted(shared[:SYNSETS_PER_WORD]))}")
    SYNSETS_PATH.write_text("\n".join(lines) + "\n", encoding="utf-8")
    licence = git_show(gitdir, "wns/wikt/LICENSE")
    citation = git_show(gitdir, "wns/wikt/citation.bib")
    SYNSETS_PATH.with_suffix(".LICENSE").write_text(
        "omw-synsets.tsv is made from the Wiktionary wordnets of the Open Multilingual Wordnet\n"
        "(https://github.com/omwn/omw-data, wns/wikt/), and is shared under the same terms:\n"
        "Creative Commons Attribution-ShareAlike 3.0 Unported.\n\n" + licence + "\n" + citation,
        encoding="utf-8",
    )
    return len(lines)


# The synsets of Princeton WordNet 3.0 under which a named natural object is a place; the stars and
# planets, natural objects too, are under none of them.
NATURE_ROOTS = {
    "09225146": "body of water",  # seas, lakes, rivers, falls
    "09287968": "geological formation",  # mountain ranges, valleys, volcanoes
    "09334396": "land, dry land",  # islands, continents
    "09335240": "land, ground, soil",
    "00027167": "location",  # peaks and passes
}
STRUCTURE = "04341686"  # "structure, construction": the named bridges, towers, temples, walls
WORDNET_KINDS = {"noun.location": "region", "noun.object": "nature", "noun.artifact": "landmark"}


def write_wordnet_places(wordnet: Path) -> int:
    """`synset<TAB>kind` for each named place of Princeton WordNet 3.0 (`data.noun` in `wordnet`,
    the folder of its database files): an instance (`@i`) in the lexicographer file of locations
    (a region: "Middle East", "Tuscany"), of natural objects under NATURE_ROOTS (nature: "Lake
    Constance", "Mediterranean", "Aconcagua") or of artifacts under STRUCTURE (a landmark:
    "Golden Gate Bridge"). `omw-synsets.tsv` numbers its synsets the same way (WordNet 3.0's
    offsets), so places.py finds "Bodensee", "地中海" and "ים המלח" by them. Sorted; WordNet's
    licence is written beside it."""
    lexnames = (wordnet / "lexnames").read_text("utf-8").split("\n")
    lexname = {int(n): name for n, name, _ in (line.split() for line in lexnames if line)}
    hypernyms: dict[str, list[str]] = {}
    instances: dict[str, str] = {}  # synset -> its lexicographer file
    for line in (wordnet / "data.noun").read_text("utf-8").splitlines():
        if line.startswith(" "):
            continue  # the licence at the head of the file
        fields = line.split(" | ")[0].split()
        offset, words = fields[0], int(fields[3], 16)
        at = 4 + 2 * words
        pointers = [fields[at + 1 + 4 * k : at + 5 + 4 * k] for k in range(int(fields[at]))]
        hypernyms[offset] = [target for symbol, target, *_ in pointers if symbol in ("@", "@i")]
        if any(symbol == "@i" for symbol, *_ in pointers):
            instances[offset] = lexname[int(fields[1])]

    def ancestors(offset: str) -> set[str]:
        seen, todo = set(), list(hypernyms[offset])
        while todo:
            if (up := todo.pop()) not in seen:
                seen.add(up)
                todo += hypernyms[up]
        return seen

    kinds = {}
    for offset, name in instances.items():
        kind = WORDNET_KINDS.get(name)
        if kind == "nature" and not NATURE_ROOTS.keys() & ancestors(offset):
            continue
        if kind == "landmark" and STRUCTURE not in ancestors(offset):
            continue
        if kind:
            kinds[f"{offset}-n"] = kind
    WORDNET_PLACES_PATH.write_text("".join(f"{s}\t{k}\n" for s, k in sorted(kinds.items())), encoding="utf-8")
    WORDNET_PLACES_PATH.with_suffix(".LICENSE").write_text(
        "wordnet-places.tsv lists synsets of Princeton WordNet 3.0 (its data.noun), under WordNet's licence:\n\n"
        + (wordnet / "LICENSE").read_text("utf-8"),
        encoding="utf-8",
    )
    return len(kinds)
