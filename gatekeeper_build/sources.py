"""The gatekeeper's labelled prompts from public sources, and the files they are kept in.

`collect_rows` reads the public sources named in `data/README.md` (a wheel
from PyPI and three git checkouts), labels each prompt by `policy.py` and
puts our own prompts (`authored.py`, `forms.py`) around them; `collect_rows_again` takes
the public sources' rows from the current files instead, so an edit of
`data/authored/` needs no checkouts. `write_prompts` writes
`data/prompts/<lang>.jsonl`, every row `{prompt, geographic, lang, source}`.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from gatekeeper_build.authored import SEED, authored_rows, place_rows, stuffing_rows
from gatekeeper_build.corpus import DATA_DIR, LabelledPrompt
from gatekeeper_build.forms import form_rows

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
    for source in (v1, authored_rows(), *upstream, place_rows(), stuffing_rows(), form_rows()):
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
                if r.form:
                    record["form"] = r.form
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
        tasks = json.loads(git_show(gitdir, path))
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
    english = json.loads(git_show(gitdir, "datasets/xGQA/annotations/few_shot/en/dev.json"))
    keep = sorted(qid for qid, q in english.items() if not _XGQA_PLACE.search(q["question"]))
    rng = random.Random(SEED)
    chosen = set(rng.sample(keep, min(240, len(keep))))
    for lang in XGQA:
        questions = json.loads(git_show(gitdir, f"datasets/xGQA/annotations/few_shot/{lang}/dev.json"))
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
        data = json.loads(git_show(gitdir, f"xquad.{lang}.json"))["data"]
        questions = [q["question"] for article in data for p in article["paragraphs"] for q in p["qas"]]
        if chosen is None:
            chosen = sorted(rng.sample(range(len(questions)), XQUAD_PER_LANGUAGE))
        for number in chosen:
            prompt = " ".join(str(questions[number]).split())
            if len(prompt) >= 8:
                yield LabelledPrompt(prompt, False, lang, "xquad:validation", f"xquad:{number}")


def _looks_english(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return len(words) >= 2 and sum(w in _ENGLISH for w in words) / len(words) >= 0.25


def git_show(gitdir: Path, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={gitdir}", "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout.decode("utf-8")
