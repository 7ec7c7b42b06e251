"""What a grader says about one run, and how a final answer is found in it.

Two graders exist: the offline one (`arena.bench.offline`, normalised match
with gazetteer aliases) and the LLM judge (`arena.bench.llm_grader`,
GeoBrowse's BrowseComp-style strict JSON verdict). Both return a `Grade`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from arena.bench.dataset import Instance

OFFLINE_GRADER = "offline"


@dataclass(frozen=True)
class Grade:
    correct: bool
    extracted_answer: str
    reasoning: str
    confidence: int | None = None
    milestones: tuple[bool, ...] | None = None  # one per expert step; None when not judged


@dataclass(frozen=True)
class Run:
    """What a grader reads of one contender's run on one instance."""

    answer: str
    trajectory: tuple[dict[str, object], ...] = ()


class Grader(Protocol):
    name: str  # stored with each grade: "offline" or "llm:<judge>"

    async def grade(self, instance: Instance, run: Run) -> Grade: ...


# Final-answer markers, strongest first: BrowseComp's "Exact Answer:", the
# usual "Final answer:", GeoBrowse agents' <answer> tag, the baselines'
# "Best guess:", then a bare "Answer:".
_MARKERS = (
    re.compile(r"^[\s>*_#-]*exact\s+answer\s*[:：]\s*(.+)$", re.IGNORECASE | re.MULTILINE),
    re.compile(r"^[\s>*_#-]*final\s+answer\s*[:：]\s*(.+)$", re.IGNORECASE | re.MULTILINE),
    re.compile(r"<answer>\s*(.+?)\s*</answer>", re.IGNORECASE | re.DOTALL),
    re.compile(r"^[\s>*_#-]*(?:最终答案|答案)\s*[:：]\s*(.+)$", re.MULTILINE),
    re.compile(r"^[\s>*_#-]*best\s+guess\s*[:：]\s*(.+)$", re.IGNORECASE | re.MULTILINE),
    re.compile(r"^[\s>*_#-]*answer\s*[:：]\s*(.+)$", re.IGNORECASE | re.MULTILINE),
)
_CONFIDENCE = re.compile(r"^[\s>*_#-]*confidence\s*[:：]\s*\**\s*(\d{1,3})\s*%", re.IGNORECASE | re.MULTILINE)
MAX_EXTRACTED_CHARS = 300


def extract_final_answer(answer: str) -> str | None:
    """The run's final answer, or None when it states none."""
    for marker in _MARKERS:
        found = marker.findall(answer)
        if found:
            return _clean(found[-1])
    return None


def stated_confidence(answer: str) -> int | None:
    found = _CONFIDENCE.findall(answer)
    if not found:
        return None
    return max(0, min(100, int(found[-1])))


def _clean(text: str) -> str:
    # "**Best guess: Anshun, Guizhou, China** (26.2° N ...) · certainty: low": the bold part
    text = text.strip()
    if "**" in text:
        text = text.split("**")[0] or text.replace("**", "")
    text = re.sub(r"\s*\([^)]*[°][^)]*\)", "", text)  # coordinates in brackets
    text = text.split(" · ")[0]
    return " ".join(text.replace("*", "").split()).strip(" .")[:MAX_EXTRACTED_CHARS]
