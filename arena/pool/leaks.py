"""Identity leaks: an answer that names a model or its maker.

Chatbot Arena drops battles whose answers reveal who wrote them, because a
voter who knows the names no longer votes blind. Here a leak flags the
battle (`identity_leak`); the vote is still taken, then left out of the
ratings and counted in the snapshot.

Matching is case-insensitive and word-aware: a Latin term must not be glued
to a Latin letter on either side (Chinese and Japanese names match anywhere), so "gpt" does not fire inside "Egypt" and "claude"
not inside "Claudette", while "GPT-4o", "gpt4" and "Claude-3" still do. A
term ending in "#" only matches when a version number follows ("llama 3",
"Llama-3.2", but not the animal). Phrases a geolocation answer uses
innocently ("Google Maps", "Street View", "the mistral wind") and links
are blanked out first.

    [leaks]
    words = ["my-lab"]          # added to the defaults and the pool's own names/models
    ignore = ["google arts"]    # phrases that never count
    defaults = true             # false: only `words` and the pool's names/models
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from arena.config import PoolConfig

DEFAULT_TERMS = (
    # OpenAI
    "openai", "chatgpt", "gpt", "gpt#", "dall-e", "o1-preview", "o1-mini", "o3-mini", "o4-mini",
    # Anthropic
    "anthropic", "claude",
    # Google
    "google", "deepmind", "gemini", "gemma", "bard", "palm#",
    # Meta
    "meta ai", "meta's", "meta platforms", "llama#", "llama-#", "code llama",
    # Alibaba
    "alibaba", "qwen", "tongyi", "qwq",
    # Mistral
    "mistral ai", "mistral#", "mistral-large", "mistral-medium", "mistral-small", "mixtral", "pixtral", "codestral",
    # DeepSeek, Moonshot, Zhipu, Baichuan, 01.AI, MiniMax, StepFun, ByteDance, Tencent, Baidu
    "deepseek", "moonshot ai", "kimi", "zhipu", "chatglm", "glm#", "glm-#", "baichuan", "01.ai", "yi#", "yi-#",
    "minimax", "stepfun", "bytedance", "doubao", "tencent", "hunyuan", "baidu", "ernie bot", "ernie#", "wenxin",
    # xAI, Microsoft, Amazon, Cohere, others
    "xai", "grok", "microsoft", "copilot", "phi#", "phi-#", "amazon nova", "amazon titan", "cohere", "command r",
    "command-r", "aya vision", "reka", "internvl", "internlm", "minicpm", "llava", "molmo", "allenai", "pixtral",
    "idefics", "hugging face", "huggingface", "nvidia nemotron", "nemotron", "cogvlm", "glm-4v",
    # in Chinese and Japanese
    "通义千问", "千问", "文心一言", "豆包", "混元", "智谱", "深度求索", "月之暗面", "谷歌", "微软", "百度", "阿里巴巴", "腾讯",
    "字节跳动", "クロード", "ジェミニ", "グーグル", "オープンエーアイ",
    # self-descriptions that name no one but still give the game away
    "language model developed by", "large language model trained by", "as an ai developed by",
)  # fmt: skip

DEFAULT_IGNORE = (
    "google maps", "google earth", "google street view", "google streetview", "google lens", "google translate",
    "google images", "google image search", "google search", "street view", "baidu maps", "baidu map",
    "baidu street view", "baidu total view", "tencent maps", "amazon river", "amazon rainforest", "amazon basin",
    "the mistral", "mistral wind", "microsoft bing maps", "bing maps", "meta's data",
    "谷歌地图", "谷歌地球", "谷歌街景", "百度地图", "百度街景", "腾讯地图", "グーグルマップ", "グーグルアース",
    "グーグルストリートビュー",
)  # fmt: skip


def find_identity_leaks(texts: Iterable[str], pool_config: PoolConfig) -> list[str]:
    """The model names and makers the texts mention, lower-cased, sorted, each once."""
    matcher = _matcher_for(_terms_key(pool_config))
    found: set[str] = set()
    for text in texts:
        if not text:
            continue
        lowered = text.lower()
        if any(marker in lowered for marker in _URL_MARKERS):  # the regex tries every character
            lowered = _URL.sub(" ", lowered)
        cleaned = matcher.ignore.sub(" ", lowered)
        terms = matcher.terms_in(cleaned)
        if terms is not None:
            found.update(_canonical(match.group(0)) for match in terms.finditer(cleaned))
    return sorted(found)


# Links (a search result on google.com, a map on openstreetmap.org) name sites, not the writer.
# A host name is only tried at a letter that starts a dotted run (after neither a letter, a
# hyphen nor a letter's dot; or after one leading hyphen): trying every label of "a.a.a..."
# anew rescanned the run each time, which made the search quadratic in an answer the model
# (or the person prompting it) chose.
_HOST_START = r"(?:(?<![\w-])(?<![\w-]\.)|(?<=-)(?<![\w.-]-))(?=\w)"
_URL = re.compile(
    r"(?:https?://|www\.)\S+|" + _HOST_START + r"[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|ai|io|cn)\b(?:/\S*)?"
)

# what every link _URL matches holds, literally
_URL_MARKERS = ("://", "www.", ".com", ".org", ".net", ".ai", ".io", ".cn")


class _Matcher:
    """The terms' regex, longest term first, and the phrases blanked before it runs.

    One alternation of all the terms tries each of them at every character: 2 ms a kilobyte,
    20 ms for the two answers of a battle. A term can only match where its first word stands
    literally, so `terms_in` first asks which first words the text holds (a substring search
    each) and runs the alternation of just their terms, in the same order: the same matches,
    as a term absent from the text matches nowhere; most answers hold none."""

    def __init__(self, terms: tuple[str, ...], ignore: tuple[str, ...]) -> None:
        self.ordered = tuple(sorted(set(terms), key=len, reverse=True))
        self._by_first_word: dict[str, list[str]] = {}
        for term in self.ordered:
            self._by_first_word.setdefault(term.rstrip("#").split()[0], []).append(term)
        ignore_part = "|".join(re.escape(i) for i in sorted(set(ignore), key=len, reverse=True)) or r"(?!x)x"
        self.ignore = re.compile(rf"(?<![a-z])(?:{ignore_part})(?![a-z])")

    def terms_in(self, text: str) -> re.Pattern[str] | None:
        """The alternation of the terms whose first word the text holds; None if there are none."""
        present = {term for word, terms in self._by_first_word.items() if word in text for term in terms}
        if not present:
            return None
        return _alternation(tuple(term for term in self.ordered if term in present))


def _terms_key(pool: PoolConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    section = pool.leaks.given()
    terms: list[str] = list(DEFAULT_TERMS) if section.get("defaults", True) else []
    terms += [str(w).lower() for w in section.get("words", [])]
    for contender in pool.contenders:
        if contender.provider == "baseline":
            continue  # the offline baselines are labelled as such anyway
        terms += _contender_terms(contender.name, contender.model)
    ignore = list(DEFAULT_IGNORE) + [str(w).lower() for w in section.get("ignore", [])]
    return tuple(t for t in terms if len(t.strip("#")) >= 3), tuple(ignore)


def _contender_terms(name: str, model: str) -> list[str]:
    """A contender's name and model as a voter might read them: "gpt-4o+gate"
    -> "gpt-4o"; "meta-llama/Llama-3.2-11B-Vision" -> also "llama-3.2-11b-vision";
    "llava:13b" -> also "llava"."""
    out: list[str] = []
    for raw in (name, model):
        value = raw.lower().strip()
        if not value:
            continue
        value = value.removesuffix("+gate")
        out.append(value)
        last = value.rsplit("/", 1)[-1]
        out.append(last)
        out.append(last.split(":", 1)[0])
    return out


@lru_cache(maxsize=256)
def _alternation(terms: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(_term_regex(t) for t in terms))


@lru_cache(maxsize=16)
def _matcher_for(key: tuple[tuple[str, ...], tuple[str, ...]]) -> _Matcher:
    return _Matcher(*key)


def _term_regex(term: str) -> str:
    # Latin terms must not be glued to a Latin letter (nor to a hyphen on the
    # left: "Saint-Claude"); digits and version suffixes may follow ("gpt-4o",
    # "claude-3"). Chinese and Japanese terms match anywhere, CJK having no spaces.
    versioned = term.endswith("#")
    body = re.escape(term.rstrip("#")).replace(r"\ ", r"\s+")
    if not term.isascii():
        return body
    if versioned:
        return rf"(?<![a-z0-9-]){body}[\s-]?\d[\w.]*"
    return rf"(?<![a-z0-9-]){body}(?![a-z])"


def _canonical(found: str) -> str:
    return " ".join(found.split()).rstrip(".")
