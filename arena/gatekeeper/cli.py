"""`arena classify`: run the gatekeeper over prompts, one JSON verdict per line.

Input is one prompt per line, or JSON lines with a `prompt` field (other
fields are ignored); `-` or no file reads standard input.

`--evaluate` measures the gatekeeper on labelled prompts (the shipped set,
or `--prompts DIR` of `{prompt, geographic, lang, source}` JSONL files) held
out by SOURCE: the offline model is refitted without each fold of sources
(scikit-learn needed) and scores the prompts it never saw; `--llm` puts the
same prompts to the configured LLM judge instead (with its offline fallback,
as in production); `--encoder` adds the encoder's second opinion, as the
gatekeeper is served by default (`[gatekeeper] encoder = true`; without
it, the offline model alone is measured, `encoder = false`), its student
fine-tuned per fold as well (jax needed, the `gatekeeper-build` extra;
15-25 minutes a fold on two cores; `--students DIR` keeps each fold's for
the next run).
Accuracy is printed overall, per language and per source, with every error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "classify",
        help="run the prompt gatekeeper over prompts (one per line, or JSONL with `prompt`)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", nargs="?", default="-", help="file of prompts, or - for standard input (default)")
    parser.add_argument(
        "--offline", action="store_true", help="use the offline classifier even if an LLM is configured"
    )
    parser.add_argument(
        "--evaluate",
        action="store_true",
        help="print held-out accuracy per language and per source, with the errors, and exit",
    )
    parser.add_argument("--llm", action="store_true", help="with --evaluate: judge with the configured LLM")
    parser.add_argument(
        "--encoder",
        action="store_true",
        help="with --evaluate: with the encoder's second opinion, as served by default (else the offline model alone)",
    )
    parser.add_argument(
        "--students", type=Path, default=None, help="with --encoder: a folder to keep each fold's student in"
    )
    parser.add_argument(
        "--prompts",
        type=Path,
        default=None,
        help="with --evaluate: a folder of labelled JSONL files instead of the shipped set",
    )
    parser.add_argument("--max-errors", type=int, default=200, help="with --evaluate: errors to list (default 200)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.evaluate:
        if args.llm and args.encoder:
            raise ValueError("--llm and --encoder evaluate different gatekeepers: choose one")
        return _evaluate(
            sys.stdout,
            prompts=args.prompts,
            llm=args.llm,
            max_errors=args.max_errors,
            encoder=args.encoder,
            students=args.students,
        )
    if args.input == "-":
        return asyncio.run(_classify_stream(sys.stdin, sys.stdout, offline=args.offline))
    path = Path(args.input)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with path.open(encoding="utf-8") as f:
        return asyncio.run(_classify_stream(f, sys.stdout, offline=args.offline))


async def _classify_stream(lines: TextIO, out: TextIO, *, offline: bool) -> int:
    async with _gatekeeper(offline=offline) as gatekeeper:
        for number, prompt in _prompts(lines):
            if prompt is None:
                print(f"arena classify: line {number}: JSON without a string `prompt`, skipped", file=sys.stderr)
                continue
            verdict = await gatekeeper.classify(prompt)
            record = {
                "prompt": prompt,
                "geographic": verdict.geographic,
                "score": verdict.score,
                "classifier": verdict.classifier,
                "reason": verdict.reason,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
    return 0


class _gatekeeper:
    """The configured gatekeeper with the HTTP client its LLM judge needs."""

    def __init__(self, *, offline: bool) -> None:
        self.offline = offline

    async def __aenter__(self) -> Any:
        import httpx

        from arena.config import Settings
        from arena.contenders.deps import ProviderDeps
        from arena.gatekeeper import build_gatekeeper
        from arena.images.store import store_for

        settings = Settings()
        pool = settings.pool
        if self.offline:
            # its `encoder` setting kept: the offline classifier as configured
            offline = pool.gatekeeper.model_copy(update={"mode": "offline"})
            pool = pool.model_copy(update={"gatekeeper": offline})
        self.http = httpx.AsyncClient()
        deps = ProviderDeps(http=self.http, images=store_for(settings), pool=pool)
        return build_gatekeeper(pool, deps)

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()


def _prompts(lines: TextIO) -> Iterator[tuple[int, str | None]]:
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("{"):
            try:
                record = json.loads(text)
            except ValueError:
                yield number, text  # a prompt that happens to start with a brace
                continue
            prompt = record.get("prompt") if isinstance(record, dict) else None
            yield number, prompt if isinstance(prompt, str) else None
        else:
            yield number, text


def _evaluate(
    out: TextIO,
    *,
    prompts: Path | None,
    llm: bool,
    max_errors: int,
    encoder: bool = False,
    students: Path | None = None,
) -> int:
    from arena.gatekeeper.dataset import load_dataset, load_prompts
    from arena.gatekeeper.evaluate import FOLDS, evaluate_offline

    if prompts is not None and not prompts.is_dir():
        raise FileNotFoundError(f"no such folder: {prompts}")
    rows = load_prompts(prompts) if prompts is not None else load_dataset()
    if not rows:
        raise ValueError("no labelled prompts to evaluate")
    quiet = not sys.stderr.isatty()
    progress = None if quiet else lambda s: print(s, file=sys.stderr)
    units = len({(r.source, r.lang) for r in rows})
    held_out = (
        f"{len(rows)} labelled prompts, {units} sources (a source in one language) held out by source "
        f"in {FOLDS} folds, each scored by a model fitted without it"
    )
    if llm:
        report, header = asyncio.run(_evaluate_llm(rows))
    elif encoder:
        from arena.gatekeeper.evaluate import evaluate_with_encoder

        report, asked = evaluate_with_encoder(rows, students, progress=progress)
        header = f"offline gatekeeper with the encoder's second opinion (asked for {asked} prompts), {held_out}:"
    else:
        report = evaluate_offline(rows, progress=progress)
        header = f"offline gatekeeper, {held_out}:"
    out.write(header + "\n")
    out.writelines(line + "\n" for line in report.lines(max_errors=max_errors))
    return 0


async def _evaluate_llm(rows: Any) -> tuple[Any, str]:
    from arena.gatekeeper.evaluate import evaluate_judge

    fallbacks = 0
    async with _gatekeeper(offline=False) as gatekeeper:
        if gatekeeper.mode != "llm":
            raise ValueError("--llm needs an LLM judge in the pool file's [gatekeeper] table")

        async def judge(prompt: str) -> bool:
            nonlocal fallbacks
            verdict = await gatekeeper.classify(prompt)
            fallbacks += verdict.classifier.startswith("offline")
            return bool(verdict.geographic)

        report = await evaluate_judge(rows, judge)
        name = gatekeeper.judge.name
    return report, (
        f"LLM gatekeeper {name}, {len(rows)} labelled prompts ({fallbacks} answered by the offline "
        "fallback after a judge failure):"
    )
