"""`arena bench`: run pool contenders on a GeoBrowse-format dataset, grade
the answers (LLM judge if configured, the offline grader always) and print
accuracy with intervals, tool shares, milestones and judge agreement."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any, Self

from arena.config import Settings


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="run contenders on a GeoBrowse-format benchmark and grade them",
        description="Run pool contenders on a GeoBrowse-format JSONL dataset (Level 1 and 2), store every run "
        "in the database (a rerun skips finished pairs), grade with the LLM judge (--judge or [judge]) "
        "and with the offline grader, and print accuracy with Wilson 95%% intervals.",
    )
    bench.add_argument(
        "--dataset", type=Path, required=True, help="GeoBrowse-format JSONL file (images relative to it)"
    )
    bench.add_argument("--contenders", required=True, help="comma-separated pool contenders, e.g. gpt-4o,gpt-4o+gate")
    bench.add_argument("--judge", help="the grading model: a pool contender or the [judge] table's name")
    bench.add_argument("--json", type=Path, help="write the report as JSON here ('-' for standard output)")
    bench.add_argument("--suite", help="name the results are stored under (default: the dataset file's name)")
    bench.add_argument("--concurrency", type=int, default=4, help="runs at once (default 4)")
    bench.add_argument("--timeout", type=float, help="seconds per run (default: the contender's timeout)")
    bench.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from arena.bench.dataset import load_dataset
    from arena.bench.judges import resolve_judge

    settings = Settings()
    pool = settings.pool
    names = [n.strip() for n in args.contenders.split(",") if n.strip()]
    configs = {c.name: c for c in pool.contenders}
    unknown = [n for n in names if n not in configs]
    if not names or unknown:
        raise ValueError(
            f"unknown contender(s) {', '.join(unknown) or '(none given)'}; the pool has: {', '.join(configs)}"
        )
    if args.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    instances = load_dataset(args.dataset)
    judge = resolve_judge(pool, args.judge)
    suite = args.suite or args.dataset.stem
    report = asyncio.run(_bench(settings, instances, names, judge, suite, args))
    # Baselines load their OCR models in a background thread; leaving while
    # it still runs makes onnxruntime abort the process at exit.
    for thread in threading.enumerate():
        if thread.name == "baseline-warm-up":
            thread.join()
    # with --json - the JSON alone goes to standard output, for pipes
    _print(report, sys.stderr if str(args.json) == "-" else sys.stdout)
    if args.json is not None:
        text = json.dumps(report, ensure_ascii=False, indent=1)
        if str(args.json) == "-":
            print(text)
        else:
            args.json.write_text(text + "\n", encoding="utf-8")
    return 0


async def _bench(
    settings: Settings, instances: list[Any], names: list[str], judge: Any, suite: str, args: argparse.Namespace
) -> dict[str, Any]:
    import httpx

    from arena.bench.judges import judge_model
    from arena.bench.llm_grader import LLMGrader
    from arena.bench.offline import OfflineGrader
    from arena.bench.report import build_report
    from arena.bench.runner import grade_suite, run_suite
    from arena.contenders.compose import ProviderDeps, build_contender
    from arena.db.ready import open_engine
    from arena.db.session import make_sessionmaker
    from arena.images.intake import IntakeLimits
    from arena.images.store import store_for

    engine = open_engine(settings.resolved_database_url)
    sessions = make_sessionmaker(engine)
    configs = {c.name: c for c in settings.pool.contenders}
    try:
        async with httpx.AsyncClient(follow_redirects=False) as http:
            images = store_for(settings)
            deps = ProviderDeps(http=http, images=images, pool=settings.pool, public_url=settings.public_url)
            contenders = {name: build_contender(configs[name], deps) for name in names}
            timeouts = {name: args.timeout or configs[name].timeout for name in names}
            limits = IntakeLimits(
                max_bytes=settings.max_upload_bytes,
                max_pixels=settings.max_pixels,
                long_side=settings.contender_long_side,
            )
            with _Bar("run") as bar:
                counts = await run_suite(
                    instances,
                    contenders,
                    sessions,
                    suite=suite,
                    concurrency=args.concurrency,
                    timeouts=timeouts,
                    limits=limits,
                    images=images,
                    on_total=bar.total,
                    progress=bar,
                )
            _say(f"{suite}: {counts.asked} runs, {counts.skipped} finished earlier, {counts.failed} failed")
            for error in counts.errors[:10]:
                _say(f"  failed: {error}")
            graders: list[Any] = []
            if judge is not None:
                graders.append(LLMGrader(judge_model(judge, deps), judge=judge.name, timeout=judge.timeout))
            graders.append(OfflineGrader())
            for grader in graders:
                with _Bar(f"grade ({grader.name})") as bar:
                    graded = await grade_suite(
                        instances,
                        names,
                        sessions,
                        grader,
                        suite=suite,
                        concurrency=args.concurrency,
                        on_total=bar.total,
                        progress=bar,
                    )
                if graded.ungraded:
                    _say(f"{grader.name}: {graded.ungraded} runs left ungraded (a rerun tries again)")
                    for error in graded.errors[:5]:
                        _say(f"  {error}")
        with sessions() as session:
            primary = graders[0].name
            report = build_report(session, suite, primary, names)
            if judge is not None:
                report["offline_report"] = build_report(session, suite, "offline", names)
        return report
    finally:
        engine.dispose()


def _print(report: dict[str, Any], out: Any) -> None:
    print(f"{report['suite']}: graded by {report['grader_label']}", file=out)
    header = f"{'contender':<28} {'level':>5} {'n':>4} {'accuracy':>9} {'95% CI':>15} {'s/run':>7} {'tools/run':>9}"
    print(header, file=out)
    for row in report["contenders"]:
        lines = [("all", row["accuracy"])] + list(row["by_level"].items())
        for level, acc in lines:
            rate = "—" if acc["rate"] is None else f"{acc['rate']:.1%}"
            ci = f"[{acc['ci_low']:.1%}, {acc['ci_high']:.1%}]"
            seconds = row["time"]["mean_s"]
            seconds_text = "—" if seconds is None else f"{seconds:.2f}"
            tools = "—" if row["tool_calls"] is None else f"{row['tool_calls']:.1f}"
            print(
                f"{row['contender']:<28} {level:>5} {acc['n']:>4} {rate:>9} {ci:>15} {seconds_text:>7} {tools:>9}",
                file=out,
            )
        for level, share in row["tool_share"].items():
            if share:
                top = ", ".join(f"{tool} {s:.1%}" for tool, s in list(share.items())[:5])
                print(f"{'':<28} tools L{level}: {top}", file=out)
        ms = row["milestones"]
        if ms["correct"]["runs"] or ms["incorrect"]["runs"]:
            print(
                f"{'':<28} milestones: correct {_pct(ms['correct']['coverage'])} "
                f"({ms['correct']['runs']} runs), incorrect {_pct(ms['incorrect']['coverage'])} "
                f"({ms['incorrect']['runs']} runs)",
                file=out,
            )
    agreement = report.get("judge_agreement")
    if agreement and agreement["runs"]:
        kappa = "undefined" if agreement["kappa"] is None else f"{agreement['kappa']:.2f}"
        print(
            f"judge vs offline grader: {agreement['agreement']['rate']:.1%} agreement on "
            f"{agreement['runs']} runs, Cohen's kappa {kappa}",
            file=out,
        )


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _say(text: str) -> None:
    print(text, file=sys.stderr)


class _Bar:
    """A tqdm bar on a terminal; silence in scripts."""

    def __init__(self, desc: str) -> None:
        self.desc = desc
        self.bar: Any = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()

    def total(self, n: int) -> None:
        if sys.stderr.isatty() and n:
            from tqdm import tqdm

            self.bar = tqdm(total=n, desc=self.desc, unit="run", file=sys.stderr, leave=False)

    def __call__(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(done)
