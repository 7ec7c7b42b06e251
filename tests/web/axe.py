"""axe-core in the browser tests: `assert_accessible(page, "leaderboard, phone")`
runs Deque's checker on the page as it stands and fails on any serious or
critical violation, naming the rule, what it means and the elements.

axe-core comes from npm at the version the Makefile pins (`make install`
puts it in the venv with its licence). It is evaluated through the DevTools
protocol, which the page's CSP does not govern, so the page is checked with
its real headers. Every run is also appended to `axe-results.jsonl` beside
the screenshots: what a closing note quotes.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SCREENSHOTS

AXE = Path(sys.prefix) / "share" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")


@dataclass(frozen=True)
class AxeReport:
    label: str
    url: str
    version: str
    violations: list[dict[str, Any]]
    passes: int
    incomplete: int

    @property
    def blocking(self) -> list[dict[str, Any]]:
        return [v for v in self.violations if v["impact"] in BLOCKING]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for v in self.violations:
            out[v["impact"]] = out.get(v["impact"], 0) + len(v["nodes"])
        return out

    def explain(self) -> str:
        lines = [f"axe-core {self.version} on {self.label} ({self.url}):"]
        for v in self.violations:
            targets = ", ".join(" ".join(n["target"]) for n in v["nodes"][:5])
            more = f" and {len(v['nodes']) - 5} more" if len(v["nodes"]) > 5 else ""
            lines.append(f"  [{v['impact']}] {v['id']}: {v['help']} - {targets}{more}")
        return "\n".join(lines)


@lru_cache(maxsize=1)
def _source() -> str:
    if not AXE.exists():
        pytest.fail(f"axe-core is missing at {AXE}: run `make install` (it fetches the pinned version from npm)")
    return AXE.read_text()


def run_axe(page: Any, label: str) -> AxeReport:
    """axe-core's default rule set (WCAG 2.x A and AA plus best practices) on `page`."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_source() + "\n;0")
    result = page.evaluate(
        """async () => {
            const r = await axe.run(document, { resultTypes: ["violations"] });
            return {
                version: axe.version,
                passes: r.passes.length,
                incomplete: r.incomplete.length,
                violations: r.violations.map(v => ({
                    id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.map(n => ({ target: n.target.map(String), html: n.html.slice(0, 200) })),
                })),
            };
        }"""
    )
    report = AxeReport(label, page.url, result["version"], result["violations"], result["passes"], result["incomplete"])
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with (SCREENSHOTS / "axe-results.jsonl").open("a") as log:
        record = {"label": label, "url": page.url, "version": report.version, "violations": report.counts()}
        log.write(json.dumps(record | {"rules": sorted({v["id"] for v in report.violations})}) + "\n")
    return report


def assert_accessible(page: Any, label: str) -> AxeReport:
    """Fail on any serious or critical axe-core violation; minor and moderate ones are logged."""
    report = run_axe(page, label)
    assert not report.blocking, report.explain()
    return report
