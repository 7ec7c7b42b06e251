"""`arena classify`: run the gatekeeper over prompts, one JSON verdict per line.

Input is one prompt per line, or JSON lines with a `prompt` field (other
fields are ignored); `-` or no file reads standard input. `--evaluate`
prints the offline model's held-out accuracy per language instead.
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
    parser.add_argument("--offline", action="store_true", help="use the offline classifier even if an LLM is configured")
    parser.add_argument("--evaluate", action="store_true",
                        help="print the offline classifier's held-out accuracy per language and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.evaluate:
        return _evaluate(sys.stdout)
    if args.input == "-":
        return asyncio.run(_classify_stream(sys.stdin, sys.stdout, offline=args.offline))
    path = Path(args.input)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with path.open(encoding="utf-8") as f:
        return asyncio.run(_classify_stream(f, sys.stdout, offline=args.offline))


async def _classify_stream(lines: TextIO, out: TextIO, *, offline: bool) -> int:
    import httpx

    from arena.config import Settings
    from arena.gatekeeper import build_gatekeeper
    from arena.images.store import ImageStore
    from arena.providers.registry import ProviderDeps

    settings = Settings()
    pool = settings.pool
    if offline:
        pool = pool.model_copy(update={"gatekeeper": {"mode": "offline"}})
    async with httpx.AsyncClient() as http:
        deps = ProviderDeps(http=http, images=ImageStore(settings.image_dir), pool=pool)
        gatekeeper = build_gatekeeper(pool, deps)
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


def _evaluate(out: TextIO) -> int:
    from arena.gatekeeper.offline import held_out_accuracy, shared_classifier

    classifier = shared_classifier()
    report = held_out_accuracy(classifier)
    out.write(f"offline gatekeeper, trained on {classifier.trained_on} prompts; held-out accuracy:\n")
    out.writelines(f"  {language}  {entry['accuracy']:.3f}  ({entry['correct']}/{entry['n']})\n"
                   for language, entry in sorted(report.items()))
    total = sum(e["n"] for e in report.values())
    correct = sum(e["correct"] for e in report.values())
    out.write(f"  all {correct / total:.3f}  ({correct}/{total})\n")
    return 0
