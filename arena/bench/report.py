"""The benchmark's figures, from the stored runs and grades.

Per contender: accuracy overall, per level and per language with Wilson 95%
intervals; time, tokens, turns and tool calls per run; for GATE contenders
the share of calls per tool per level (GeoBrowse's tool analysis); the
milestone coverage of correct and of incorrect runs (GeoBrowse's trajectory
analysis). Beside them, how the LLM judge agrees with the offline grader
on the runs both graded.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from statistics import mean, median
from typing import Any

from sqlalchemy.orm import Session

from arena.bench import repository
from arena.bench.grades import OFFLINE_GRADER
from arena.bench.repository import StoredRun
from arena.bench.stats import cohen_kappa, wilson

GRADER_NOTES = {
    OFFLINE_GRADER: "offline grader: normalised match with GeoNames/pycountry aliases, no model",
}


def grader_label(grader: str) -> str:
    if grader in GRADER_NOTES:
        return GRADER_NOTES[grader]
    return f"LLM judge {grader.removeprefix('llm:')} (strict JSON verdict against the gold answer)"


def build_report(session: Session, suite: str, grader: str, contenders: Sequence[str] | None = None) -> dict[str, Any]:
    """The report of one suite as one grader graded it."""
    stored = repository.runs(session, suite, contenders)
    grades = repository.grades(session, suite)
    names = list(contenders) if contenders is not None else list(dict.fromkeys(r.contender for r in stored))
    rows = []
    for name in names:
        mine = [r for r in stored if r.contender == name]
        rows.append(contender_figures(name, mine, {r.id: grades.get((r.id, grader)) for r in mine}))
    report: dict[str, Any] = {
        "suite": suite,
        "grader": grader,
        "grader_label": grader_label(grader),
        "offline": grader == OFFLINE_GRADER,
        "contenders": rows,
    }
    if grader != OFFLINE_GRADER:
        report["judge_agreement"] = judge_agreement(stored, grades, grader)
    return report


def contender_figures(name: str, runs: Sequence[StoredRun], grades: dict[int, Any]) -> dict[str, Any]:
    done = [r for r in runs if r.status == "done"]
    graded = [(r, grades[r.id]) for r in done if grades.get(r.id) is not None]
    # a failed run is a wrong answer: it counts in n, never in k
    scored = [(r, bool(g.correct)) for r, g in graded] + [(r, False) for r in runs if r.status == "error"]

    def accuracy(rows: list[tuple[StoredRun, bool]]) -> dict[str, Any]:
        return wilson(sum(ok for _, ok in rows), len(rows)).as_dict()

    levels = sorted({r.level for r in runs})
    languages = sorted({r.language for r in runs})
    return {
        "contender": name,
        "gate": any(r.gate for r in runs),
        "runs": len(runs),
        "errors": sum(r.status == "error" for r in runs),
        "ungraded": len(done) - len(graded),
        "accuracy": accuracy(scored),
        "by_level": {str(level): accuracy([s for s in scored if s[0].level == level]) for level in levels},
        "by_language": {lang: accuracy([s for s in scored if s[0].language == lang]) for lang in languages},
        "time": _timing(done),
        "tokens": _tokens(done),
        "turns": _mean([r.turns for r in done]),
        "tool_calls": _mean([r.tool_calls for r in done]),
        "tool_share": {str(level): tool_share([r for r in done if r.level == level]) for level in levels},
        "milestones": milestone_coverage(graded),
    }


def tool_share(runs: Sequence[StoredRun]) -> dict[str, float]:
    """Share of all tool calls per tool, largest first (GeoBrowse reports these per level)."""
    calls = Counter(str(step.get("tool")) for r in runs for step in r.trajectory)
    total = sum(calls.values())
    return {tool: round(n / total, 4) for tool, n in calls.most_common()} if total else {}


def milestone_coverage(graded: Sequence[tuple[StoredRun, Any]]) -> dict[str, Any]:
    """Mean share of expert steps reached, over correct and over incorrect runs."""
    out: dict[str, Any] = {}
    for label, want in (("correct", True), ("incorrect", False)):
        shares = [sum(g.milestones) / len(g.milestones) for _, g in graded if bool(g.correct) is want and g.milestones]
        out[label] = {"runs": len(shares), "coverage": _mean(shares)}
    return out


def judge_agreement(runs: Sequence[StoredRun], grades: dict[tuple[int, str], Any], judge: str) -> dict[str, Any]:
    """Agreement and Cohen's kappa between the LLM judge and the offline grader
    on the runs both graded (GeoBrowse checked its judge against experts)."""
    pairs = [
        (bool(grades[(r.id, OFFLINE_GRADER)].correct), bool(grades[(r.id, judge)].correct))
        for r in runs
        if (r.id, OFFLINE_GRADER) in grades and (r.id, judge) in grades
    ]
    offline = [a for a, _ in pairs]
    llm = [b for _, b in pairs]
    return {
        "against": OFFLINE_GRADER,
        "runs": len(pairs),
        "agreement": wilson(sum(a == b for a, b in pairs), len(pairs)).as_dict(),
        "kappa": None if (k := cohen_kappa(offline, llm)) is None else round(k, 4),
        "both_correct": sum(a and b for a, b in pairs),
        "only_judge_correct": sum(b and not a for a, b in pairs),
        "only_offline_correct": sum(a and not b for a, b in pairs),
        "both_wrong": sum(not a and not b for a, b in pairs),
    }


def all_reports(session: Session) -> list[dict[str, Any]]:
    """A report per (suite, grader) with grades, LLM judges before the offline grader."""
    pairs = repository.suites_and_graders(session)
    pairs.sort(key=lambda p: (p[0], p[1] == OFFLINE_GRADER, p[1]))
    return [build_report(session, suite, grader) for suite, grader in pairs]


def _timing(runs: Sequence[StoredRun]) -> dict[str, Any]:
    times = [r.latency_ms / 1000 for r in runs if r.latency_ms is not None]
    if not times:
        return {"mean_s": None, "median_s": None, "total_s": None}
    return {"mean_s": round(mean(times), 3), "median_s": round(median(times), 3), "total_s": round(sum(times), 3)}


def _tokens(runs: Sequence[StoredRun]) -> dict[str, Any]:
    sums: dict[str, list[int]] = defaultdict(list)
    for r in runs:
        if r.input_tokens is not None:
            sums["input"].append(r.input_tokens)
        if r.output_tokens is not None:
            sums["output"].append(r.output_tokens)
    return {
        "mean_input": _mean(sums["input"]),
        "mean_output": _mean(sums["output"]),
        "runs_reporting": max(len(sums["input"]), len(sums["output"])),
    }


def _mean(values: Sequence[float]) -> float | None:
    return round(mean(values), 4) if values else None
