"""Make the offline gatekeeper's data and model (a developer's tool, never
imported by the server).

    python -m arena.gatekeeper.build collect --chatterbot WHEEL --mhumaneval GITDIR --iglue GITDIR --xquad GITDIR
    python -m arena.gatekeeper.build collect              # after editing data/authored/ only
    python -m arena.gatekeeper.build keywords --cldr GITDIR
    python -m arena.gatekeeper.build synsets --omw GITDIR
    python -m arena.gatekeeper.build fit

`collect` reads the public sources named in `data/README.md` (a wheel from
PyPI and three git checkouts), labels each prompt by `policy.py`, adds the
prompts we wrote ourselves (`data/authored/`) and writes
`data/prompts/<lang>.jsonl`, every row `{prompt, geographic, lang, source}`.
Without the four sources it takes their rows from the current files, so
an edit of `data/authored/` needs no checkouts (the same files come out).
`keywords` writes `data/cldr-keywords.tsv` from a checkout of CLDR's JSON,
`synsets` writes `data/omw-synsets.tsv` from one of the Open Multilingual
Wordnet's data (keywords.py says what the tables are for).
`fit` trains the logistic regression on all of them and writes
`data/model.npz` (weights, bias, the dataset's hash: arrays only, loaded
without pickle). Both are deterministic: the same inputs give the same files.
`collect` needs babel (`pip install -e '.[gatekeeper-build]'`); `fit` needs
scikit-learn, a dependency of the arena already.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import random
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from arena.gatekeeper.alignment import Alignment, induce
from arena.gatekeeper.dataset import (
    DATA_DIR,
    LabelledPrompt,
    dataset_hash,
    load_dataset,
)
from arena.gatekeeper.keywords import KEYWORDS_PATH, SYNSETS_PATH, Keywords

FLORES = {
    "ar": "arb_Arab",
    "bn": "ben_Beng",
    "cs": "ces_Latn",
    "de": "deu_Latn",
    "el": "ell_Grek",
    "en": "eng_Latn",
    "es": "spa_Latn",
    "fa": "pes_Arab",
    "fr": "fra_Latn",
    "he": "heb_Hebr",
    "hi": "hin_Deva",
    "hu": "hun_Latn",
    "id": "ind_Latn",
    "it": "ita_Latn",
    "ja": "jpn_Jpan",
    "ko": "kor_Hang",
    "ms": "zsm_Latn",
    "nl": "nld_Latn",
    "pl": "pol_Latn",
    "pt": "por_Latn",
    "ro": "ron_Latn",
    "ru": "rus_Cyrl",
    "sv": "swe_Latn",
    "sw": "swh_Latn",
    "th": "tha_Thai",
    "tl": "tgl_Latn",
    "tr": "tur_Latn",
    "uk": "ukr_Cyrl",
    "vi": "vie_Latn",
    "zh": "zho_Hans",
}
CHATTERBOT = {
    "bengali": "bn",
    "chinese": "zh",
    "dutch": "nl",
    "english": "en",
    "french": "fr",
    "german": "de",
    "hebrew": "he",
    "hindi": "hi",
    "indonesian": "id",
    "italian": "it",
    "japanese": "ja",
    "korean": "ko",
    "persian": "fa",
    "portuguese": "pt",
    "russian": "ru",
    "spanish": "es",
    "swedish": "sv",
    "thai": "th",
    "turkish": "tr",
    "ukrainian": "uk",
}
XGQA = ("bn", "de", "en", "id", "ko", "pt", "ru", "zh")
# xGQA questions whose English asks what kind of place a scene is: not
# about *where*, but too close to call, so they stay out of the data.
_XGQA_PLACE = re.compile(r"\b(place|where|country|city|town|located|location|room|area)\b", re.IGNORECASE)
_ENGLISH = {"the", "is", "are", "you", "what", "how", "do", "a", "i", "of", "to", "and", "it", "in", "me", "your"}
SEED = 12


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arena.gatekeeper.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    collect = sub.add_parser(
        "collect", help="rebuild data/prompts/*.jsonl from the public sources (or, without them, the current files)"
    )
    collect.add_argument("--chatterbot", type=Path, help="chatterbot_corpus-1.3.3 wheel")
    collect.add_argument("--mhumaneval", type=Path, help="git dir of mraihan-gmu/mHumanEval-Benchmark")
    collect.add_argument("--iglue", type=Path, help="git dir of e-bug/iglue")
    collect.add_argument("--xquad", type=Path, help="git dir of google-deepmind/xquad")
    annotations = sub.add_parser("keywords", help="rebuild data/cldr-keywords.tsv from CLDR's emoji annotations")
    annotations.add_argument("--cldr", type=Path, required=True, help="git dir of unicode-org/cldr-json")
    synsets = sub.add_parser("synsets", help="rebuild data/omw-synsets.tsv from the Wiktionary wordnets")
    synsets.add_argument("--omw", type=Path, required=True, help="git dir of omwn/omw-data")
    fit = sub.add_parser("fit", help="fit data/model.npz on data/prompts")
    fit.add_argument("--c", type=float, default=DEFAULT_C, help="inverse regularisation strength")
    sub.add_parser("languages", help="rebuild the language identifier's Latin-script profiles")
    args = parser.parse_args(argv)
    if args.command == "languages":
        path = write_language_profiles(load_dataset())
        print(f"wrote {path}", file=sys.stderr)
    elif args.command == "keywords":
        count = write_keywords(args.cldr)
        print(f"wrote {count} keywords to {KEYWORDS_PATH}", file=sys.stderr)
    elif args.command == "synsets":
        count = write_synsets(args.omw)
        print(f"wrote {count} words to {SYNSETS_PATH}", file=sys.stderr)
    elif args.command == "collect":
        upstream = (args.chatterbot, args.mhumaneval, args.iglue, args.xquad)
        if any(upstream) and not all(upstream):
            parser.error("collect takes all four sources, or none (their rows are then read from the current files)")
        rows = list(collect_rows(*upstream) if all(upstream) else collect_rows_again())
        write_prompts(rows)
        print(f"wrote {len(rows)} prompts to {DATA_DIR / 'prompts'}", file=sys.stderr)
    else:
        rows = list(load_dataset())
        path = fit_and_save(rows, c=args.c)
        print(f"fitted on {len(rows)} prompts: {path}", file=sys.stderr)
    return 0


# -- collecting --------------------------------------------------------------------


def collect_rows(chatterbot: Path, mhumaneval: Path, iglue: Path, xquad: Path) -> Iterator[LabelledPrompt]:
    return _distinct(_v1(), _chatterbot(chatterbot), _mhumaneval(mhumaneval), _xgqa(iglue), _xquad(xquad))


def collect_rows_again() -> Iterator[LabelledPrompt]:
    """`collect_rows` with each public source's rows as the current files hold them (a public
    prompt that an authored line shadowed is not among them, until a collect from the sources)."""
    families = ("chatterbot-corpus", "mhumaneval", "xgqa", "xquad")
    current = _current(tuple(f"{family}:" for family in ("geoarena-v1", *families)))
    return _distinct(current["geoarena-v1"], *(current[family] for family in families))


def _distinct(v1: Iterable[LabelledPrompt], *upstream: Iterable[LabelledPrompt]) -> Iterator[LabelledPrompt]:
    """Every source in turn, ours around the public ones; a prompt met twice is kept where first met."""
    seen: set[str] = set()
    for source in (v1, _authored(), *upstream, _places(), _stuffing()):
        for row in source:
            key = " ".join(row.prompt.lower().split())
            if key and key not in seen:
                seen.add(key)
                yield row


def write_prompts(rows: Iterable[LabelledPrompt]) -> None:
    folder = DATA_DIR / "prompts"
    folder.mkdir(exist_ok=True)
    by_lang: dict[str, list[LabelledPrompt]] = {}
    for row in rows:
        by_lang.setdefault(row.lang, []).append(row)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    for lang, items in sorted(by_lang.items()):
        items.sort(key=lambda r: (r.source, r.prompt))
        with (folder / f"{lang}.jsonl").open("w", encoding="utf-8") as f:
            for r in items:
                record: dict[str, object] = {
                    "prompt": r.prompt,
                    "geographic": r.geographic,
                    "lang": r.lang,
                    "source": r.source,
                }
                if r.group:
                    record["group"] = r.group
                f.write(json.dumps(record, ensure_ascii=False) + "\n")


def _v1() -> Iterator[LabelledPrompt]:
    """The first gatekeeper's ten-language set (written for this project), kept as one more
    source; it cannot be re-read from anywhere, so its rows come from the current files."""
    yield from _current(("geoarena-v1:",))["geoarena-v1"]


def _current(prefixes: tuple[str, ...]) -> dict[str, list[LabelledPrompt]]:
    """The rows of the current files whose source starts with one of `prefixes`, by family."""
    found: dict[str, list[LabelledPrompt]] = {prefix.removesuffix(":"): [] for prefix in prefixes}
    for path in sorted((DATA_DIR / "prompts").glob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            row = json.loads(line)
            if row["source"].startswith(prefixes):
                prompt = LabelledPrompt(
                    row["prompt"], row["geographic"], row["lang"], row["source"], row.get("group", "")
                )
                found[prompt.family].append(prompt)
    return found


def _chatterbot(wheel: Path) -> Iterator[LabelledPrompt]:
    """The first (user) turn of each conversation: chat, trivia, jokes; no photo in play."""
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            parts = name.split("/")
            if len(parts) != 4 or parts[1] != "data" or not name.endswith(".yml") or parts[2] not in CHATTERBOT:
                continue
            lang, category = CHATTERBOT[parts[2]], parts[3].removesuffix(".yml")
            text = archive.read(name).decode("utf-8")
            for turn in re.findall(r"^- - (.+)$", text, flags=re.MULTILINE):
                prompt = turn.strip().strip("'\"").strip()
                if len(prompt) < 4 or (lang != "en" and _looks_english(prompt)):
                    continue  # a few files of other languages hold English conversations
                yield LabelledPrompt(prompt, False, lang, f"chatterbot-corpus:{category}")


def _mhumaneval(gitdir: Path) -> Iterator[LabelledPrompt]:
    """HumanEval's Python tasks translated into each language: the task as prose, and a few as code."""
    rng = random.Random(SEED)
    for lang, code in FLORES.items():
        path = f"mHumanEval-{{NL}}/{code}/mHumanEval-{code}-python.json"
        tasks = json.loads(_git_show(gitdir, path))
        for number, task in enumerate(tasks):
            prompt = str(task["prompt"])
            doc = re.search(r'"""(.*?)(?:>>>|Example|"""|$)', prompt, flags=re.DOTALL)
            prose = " ".join(doc.group(1).split()) if doc else ""
            if len(prose) >= 20 and number % 2 == 0:
                yield LabelledPrompt(prose[:600], False, lang, "mhumaneval:task", f"mhumaneval:{number}")
            elif number % 8 == 1 or (rng.random() < 0.05):
                yield LabelledPrompt(prompt.strip()[:900], False, lang, "mhumaneval:code")


def _xgqa(gitdir: Path) -> Iterator[LabelledPrompt]:
    """xGQA's questions about photos (objects, colours, relations): a photo, but not its place."""
    english = json.loads(_git_show(gitdir, "datasets/xGQA/annotations/few_shot/en/dev.json"))
    keep = sorted(qid for qid, q in english.items() if not _XGQA_PLACE.search(q["question"]))
    rng = random.Random(SEED)
    chosen = set(rng.sample(keep, min(240, len(keep))))
    for lang in XGQA:
        questions = json.loads(_git_show(gitdir, f"datasets/xGQA/annotations/few_shot/{lang}/dev.json"))
        for qid in sorted(chosen):
            if qid in questions:
                yield LabelledPrompt(str(questions[qid]["question"]).strip(), False, lang, "xgqa:dev", f"xgqa:{qid}")


XQUAD = ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
XQUAD_PER_LANGUAGE = 200


def _xquad(gitdir: Path) -> Iterator[LabelledPrompt]:
    """XQuAD's questions on Wikipedia paragraphs (sport, science, history, places ...), the same
    sample in each of its languages: knowledge questions with no photo in play."""
    rng = random.Random(SEED)
    chosen: list[int] | None = None
    for lang in XQUAD:
        data = json.loads(_git_show(gitdir, f"xquad.{lang}.json"))["data"]
        questions = [q["question"] for article in data for p in article["paragraphs"] for q in p["qas"]]
        if chosen is None:
            chosen = sorted(rng.sample(range(len(questions)), XQUAD_PER_LANGUAGE))
        for number in chosen:
            prompt = " ".join(str(questions[number]).split())
            if len(prompt) >= 8:
                yield LabelledPrompt(prompt, False, lang, "xquad:validation", f"xquad:{number}")


# The authored files other than English's are written line for line: line k of a section
# says the same in each of them (checked by a test), so (section, k) is a translation group.
PARALLEL_EXCEPT = ("en",)


def _authored() -> Iterator[LabelledPrompt]:
    """Our own prompts, `data/authored/<lang>.txt`: `# <section>` headers, one prompt a line."""
    for path in sorted((DATA_DIR / "authored").glob("*.txt")):
        lang = path.stem
        for section, lines in _sections(path).items():
            if section == "stuffing" or section.endswith("-templates"):
                continue
            geographic = section.startswith("geo")
            for number, text in enumerate(lines):
                group = "" if lang in PARALLEL_EXCEPT else f"authored:{section}:{number}"
                yield LabelledPrompt(text, geographic, lang, f"geoarena-authored:{section}", group)
        yield from _pairs(path)


def _pairs(path: Path) -> Iterator[LabelledPrompt]:
    """Two questions of one section asked together, as people do ("Where is this? Is it cold
    there in winter?"); kept in their section's source, so a held-out section takes its pairs."""
    for section, lines in sorted(_sections(path).items()):
        if section == "stuffing" or section.endswith("-templates") or len(lines) < 2:
            continue
        rng = random.Random(f"{SEED}{path.stem}:{section}")  # a new section leaves the others' pairs as they are
        pairs = [(a, b) for a in lines for b in lines if a != b]
        for a, b in rng.sample(pairs, min(len(pairs), 3 * len(lines))):
            yield LabelledPrompt(f"{a} {b}", section.startswith("geo"), path.stem, f"geoarena-authored:{section}")


# Countries whose names fill the `{place}` templates, in each language by CLDR (babel).
PLACE_CODES = (
    "JP",
    "BR",
    "FR",
    "DE",
    "IN",
    "CN",
    "US",
    "MX",
    "KE",
    "EG",
    "TR",
    "VN",
    "TH",
    "ID",
    "RU",
    "PE",
    "NO",
    "IT",
    "ES",
    "AU",
    "ZA",
    "MA",
    "IR",
    "PL",
    "GR",
    "AR",
    "CA",
    "NG",
    "PH",
    "KR",
)


def _places() -> Iterator[LabelledPrompt]:
    """The `{place}` templates of each language filled with country names in that language:
    taken when they ask about the photo, refused when they are a quiz about the country."""
    try:
        from babel import Locale
    except ImportError:
        raise SystemExit("build collect needs babel: pip install -e '.[gatekeeper-build]'") from None

    for path in sorted((DATA_DIR / "authored").glob("*.txt")):
        lang = path.stem
        names = Locale.parse({"tl": "fil"}.get(lang, lang)).territories
        rng = random.Random(f"{SEED}places{lang}")
        for section, lines in sorted(_sections(path).items()):
            if not section.endswith("-templates"):
                continue
            geographic = section.startswith("geo")
            for number, template in enumerate(lines):
                for code in rng.sample(PLACE_CODES, 12):
                    yield LabelledPrompt(
                        template.replace("{place}", names[code]),
                        geographic,
                        lang,
                        f"geoarena-augmented:{section}",
                        "" if lang in PARALLEL_EXCEPT else f"places:{section}:{number}:{code}",
                    )


def _stuffing() -> Iterator[LabelledPrompt]:
    """Place words stuffed before and after requests that are not about a photo's place: the
    words alone must not carry a prompt through."""
    rng = random.Random(SEED)
    for path in sorted((DATA_DIR / "authored").glob("*.txt")):
        lang = path.stem
        sections = _sections(path)
        words = " ".join(sections.get("stuffing", [])).split()
        others = [
            (name, line) for name in ("not-geo-photo", "not-geo-other", "quiz") for line in sections.get(name, [])
        ]
        if not words or not others:
            continue
        for number in range(24):
            picked = " ".join(rng.sample(words, min(len(words), rng.randint(3, 7))))
            name, request = rng.choice(others)
            sep = rng.choice([": ", ", ", " - ", ". ", " "])
            prompt = f"{picked}{sep}{request}" if number % 3 else f"{request} {picked}"
            # named after the request's section, so the evaluation holds both out together
            yield LabelledPrompt(prompt, False, lang, f"geoarena-augmented:stuffing-{name}")


def _sections(path: Path) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = ""
    for line in path.read_text("utf-8").splitlines():
        text = line.strip()
        if text.startswith("# "):
            current = text[2:].strip()
        elif text:
            sections.setdefault(current, []).append(text)
    return sections


def _looks_english(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return len(words) >= 2 and sum(w in _ENGLISH for w in words) / len(words) >= 0.25


def _git_show(gitdir: Path, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout.decode("utf-8")


# CLDR's locale for each of the gatekeeper's languages, where the two differ
CLDR_LOCALES = {"tl": "fil"}


def write_keywords(gitdir: Path) -> int:
    """`lang<TAB>keyword<TAB>emoji...` for every single-word keyword of CLDR's emoji
    annotations in each language (sorted: the same checkout gives the same file),
    and CLDR's licence beside it."""
    from arena.gatekeeper.features import normalise, words_of
    from arena.gatekeeper.policy import LANGUAGES

    lines = []
    for lang in LANGUAGES:
        locale = CLDR_LOCALES.get(lang, lang)
        path = f"cldr-json/cldr-annotations-full/annotations/{locale}/annotations.json"
        annotations = json.loads(_git_show(gitdir, path))["annotations"]["annotations"]
        named: dict[str, set[str]] = {}
        for emoji, names in annotations.items():
            for keyword in names.get("default", []) + names.get("tts", []):
                words = words_of(normalise(keyword))
                if len(words) == 1 and not words[0].isdigit():
                    named.setdefault(words[0], set()).add(emoji)
        lines += [f"{lang}\t{word}\t{' '.join(sorted(emoji))}" for word, emoji in sorted(named.items())]
    KEYWORDS_PATH.write_text("\n".join(lines) + "\n", encoding="utf-8")
    KEYWORDS_PATH.with_suffix(".LICENSE").write_text(_git_show(gitdir, "LICENSE"), encoding="utf-8")
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
    from arena.gatekeeper.features import normalise, words_of
    from arena.gatekeeper.policy import LANGUAGES

    senses: dict[tuple[str, str], set[str]] = {}
    named_in: dict[str, set[str]] = {}
    for lang in LANGUAGES:
        for line in _git_show(gitdir, f"wns/wikt/wn-wikt-{OMW_CODES[lang]}.tab").splitlines():
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
    licence = _git_show(gitdir, "wns/wikt/LICENSE")
    citation = _git_show(gitdir, "wns/wikt/citation.bib")
    SYNSETS_PATH.with_suffix(".LICENSE").write_text(
        "omw-synsets.tsv is made from the Wiktionary wordnets of the Open Multilingual Wordnet\n"
        "(https://github.com/omwn/omw-data, wns/wikt/), and is shared under the same terms:\n"
        "Creative Commons Attribution-ShareAlike 3.0 Unported.\n\n" + licence + "\n" + citation,
        encoding="utf-8",
    )
    return len(lines)


# -- fitting -----------------------------------------------------------------------

DEFAULT_C = 10.0


def fit_weights(
    rows: list[LabelledPrompt], keywords: Keywords, *, c: float = DEFAULT_C
) -> tuple[np.ndarray, float, Alignment]:
    """Logistic regression on hashed n-grams and cross-lingual concepts (induced from these
    rows' translation groups, and CLDR's keywords: keywords.py); each (language, label) and each source weighs the same in
    total, so a big source (code) does not teach the model that long means no."""
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    from arena.gatekeeper.features import DIMENSIONS, feature_rows

    alignment = induce([(r.group, r.lang, r.prompt) for r in rows])
    data, indices, indptr = feature_rows([r.prompt for r in rows], alignment, keywords)
    x = sp.csr_matrix((data, indices, indptr), shape=(len(rows), DIMENSIONS))
    y = np.array([r.geographic for r in rows], dtype=int)
    weights = _balanced_weights(rows)
    model = LogisticRegression(C=c, solver="liblinear", max_iter=2000)
    model.fit(x, y, sample_weight=weights)
    return model.coef_[0].astype(np.float32), float(model.intercept_[0]), alignment


def _balanced_weights(rows: list[LabelledPrompt]) -> np.ndarray:
    """Each (language, label) cell weighs the same in total, so n-grams of a language
    with few geographic prompts are not learnt as signs of refusal; inside a cell a
    source weighs the square root of its size."""
    from collections import Counter

    source = Counter((r.lang, r.geographic, r.source) for r in rows)
    w = np.array([source[(r.lang, r.geographic, r.source)] ** -0.5 * _emphasis(r) for r in rows])
    cells: dict[tuple[str, bool], float] = {}
    for r, weight in zip(rows, w, strict=True):
        cells[(r.lang, r.geographic)] = cells.get((r.lang, r.geographic), 0.0) + weight
    w = np.array([weight / cells[(r.lang, r.geographic)] for r, weight in zip(rows, w, strict=True)])
    return np.asarray(w * len(rows) / w.sum())


# Refusals that are about a photo ("What breed is this dog?") teach the line the policy draws
# better than chat that never mentions one, so they count more.
HARD_NEGATIVES = ("xgqa:", "geoarena-v1:not-geo", "geoarena-authored:not-geo-photo", "geoarena-augmented:")
HARD_NEGATIVE_WEIGHT = 2.0


def _emphasis(row: LabelledPrompt) -> float:
    return HARD_NEGATIVE_WEIGHT if not row.geographic and row.source.startswith(HARD_NEGATIVES) else 1.0


def fit_and_save(rows: list[LabelledPrompt], *, c: float = DEFAULT_C) -> Path:
    keywords = Keywords.read_tsv()
    coef, bias, alignment = fit_weights(rows, keywords, c=c)
    path = DATA_DIR / "model.npz"
    digest = np.frombuffer(bytes.fromhex(dataset_hash(rows)), dtype=np.uint8)
    arrays: dict[str, np.ndarray] = {
        "weights": coef,
        "bias": np.array([bias], dtype=np.float64),
        "dataset_sha256": digest,
        "trained_on": np.array([len(rows)], dtype=np.int64),
        "c": np.array([c], dtype=np.float64),
        "alignment_keys": alignment.keys,
        "alignment_concepts": alignment.concepts,
        "keywords_sha256": np.frombuffer(bytes.fromhex(file_sha256(KEYWORDS_PATH)), dtype=np.uint8),
        "synsets_sha256": np.frombuffer(bytes.fromhex(file_sha256(SYNSETS_PATH)), dtype=np.uint8),
        **keywords.arrays(),
    }
    buffer = io.BytesIO()
    np.savez_compressed(buffer, allow_pickle=False, **arrays)
    path.write_bytes(buffer.getvalue())
    return path


# -- the language identifier's profiles ----------------------------------------------

LATIN = ("cs", "de", "en", "es", "fr", "hu", "id", "it", "ms", "nl", "pl", "pt", "ro", "sv", "sw", "tl", "tr", "vi")
PROFILE_SIZE = 700


def write_language_profiles(rows: Iterable[LabelledPrompt]) -> Path:
    """Per Latin-script language, the log-frequency of its commonest character 1-3-grams
    (code left out: its identifiers are English) and a floor for every other n-gram."""
    import math
    import unicodedata
    from collections import Counter

    from arena.geo import language

    counts: dict[str, Counter[str]] = {lang: Counter() for lang in LATIN}
    for row in rows:
        if row.lang in counts and row.source != "mhumaneval:code":
            text = unicodedata.normalize("NFKC", row.prompt).lower()
            for word in re.findall(r"[^\W\d_]+", text):
                counts[row.lang].update(language._grams(word))
    profiles = {}
    for lang, counter in counts.items():
        total = sum(counter.values())
        top = counter.most_common(PROFILE_SIZE)
        profiles[lang] = {
            "floor": round(math.log(top[-1][1] / total) - 1.0, 3),
            "grams": {g: round(math.log(c / total), 3) for g, c in top},
        }
    path = Path(language.__file__).with_name("language_profiles.json")
    path.write_text(json.dumps(profiles, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return path


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    raise SystemExit(main())
