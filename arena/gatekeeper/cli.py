"""`arena classify`: run the gatekeeper over prompts, one JSON verdict per line; and
`arena unsure list|mark|recheck`: the battles the gatekeeper was unsure of (recheck.py).

Input is one prompt per line, or JSON lines with a `prompt` field (other
fields are ignored); `-` or no file reads standard input.

`--evaluate` measures the gatekeeper on its labelled prompts held out by
source and by form (`--by`), the shipped model on the hand-written unseen
set (`--unseen`), or the configured LLM judge (`--llm`). The corpus and the
fitting live in the build (`gatekeeper_build/` of a checkout, never
installed), so `--evaluate` runs `python -m gatekeeper_build evaluate` there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
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
        "--evaluate", action="store_true", help="print held-out figures per language and form, with the errors"
    )
    parser.add_argument("--by", choices=("source", "form", "both"), default="both", help="with --evaluate: hold out")
    parser.add_argument("--unseen", action="store_true", help="with --evaluate: the shipped model on the unseen set")
    parser.add_argument("--llm", action="store_true", help="with --evaluate: judge with the configured LLM")
    parser.add_argument("--prompts", type=Path, help="with --evaluate: a folder of labelled JSONL files instead")
    parser.add_argument("--max-errors", type=int, default=200, help="with --evaluate: errors to list (default 200)")
    parser.set_defaults(func=run)

    unsure = subparsers.add_parser("unsure", help="the battles the gatekeeper was unsure of, and their re-checks")
    sub = unsure.add_subparsers(title="unsure commands", metavar="UNSURECOMMAND")
    sub.add_parser("list", help="every unsure battle with its re-check").set_defaults(func=_list)
    mark = sub.add_parser("mark", help="a reviewer's re-check of one battle (overrules the LLM judge's)")
    mark.add_argument("battle_id")
    mark.add_argument("answer", choices=("geographic", "not_geographic"))
    mark.set_defaults(func=_mark)
    sub.add_parser(
        "recheck", help="ask the configured LLM judge about the unsure battles not yet re-checked"
    ).set_defaults(func=_recheck)


def run(args: argparse.Namespace) -> int:
    if args.evaluate:
        return _evaluate(args)
    if args.input == "-":
        return asyncio.run(_classify_stream(sys.stdin, sys.stdout, offline=args.offline))
    path = Path(args.input)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    with path.open(encoding="utf-8") as f:
        return asyncio.run(_classify_stream(f, sys.stdout, offline=args.offline))


def _evaluate(args: argparse.Namespace) -> int:
    """`python -m gatekeeper_build evaluate` in the checkout the arena runs from."""
    checkout = Path(__file__).resolve().parents[2]
    if not (checkout / "gatekeeper_build" / "__main__.py").is_file():
        raise FileNotFoundError(
            "--evaluate needs the gatekeeper's build, which is in a checkout of the repository, not in an install"
        )
    command = [sys.executable, "-m", "gatekeeper_build", "evaluate", "--by", args.by]
    command += ["--max-errors", str(args.max_errors)] + ["--unseen"] * args.unseen + ["--llm"] * args.llm
    if args.prompts is not None:
        if not args.prompts.is_dir():
            raise FileNotFoundError(f"no such folder: {args.prompts}")
        command += ["--prompts", str(args.prompts.resolve())]
    return subprocess.run(command, cwd=checkout, check=False).returncode


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
                "decision": verdict.decision,
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


def _list(args: argparse.Namespace) -> int:
    from arena.gatekeeper.recheck import unsure_battles

    with _sessions() as sessions, sessions() as session:
        for bid, created, recheck, by, prompt in unsure_battles(session):
            answer = f"{recheck} ({by})" if recheck else "not re-checked"
            print(f"{bid}  {created:%Y-%m-%d %H:%M}  {answer:<40}  {' '.join(prompt.split())[:80]}")
    return 0


def _mark(args: argparse.Namespace) -> int:
    from arena.gatekeeper.recheck import record

    with _sessions() as sessions, sessions() as session:
        if not record(session, args.battle_id, args.answer == "geographic", "reviewer"):
            raise ValueError(f"there is no battle {args.battle_id!r}")
        session.commit()
    print(f"{args.battle_id}: {args.answer} (reviewer)")
    return 0


def _recheck(args: argparse.Namespace) -> int:
    from arena.config import Settings
    from arena.gatekeeper.recheck import recheck_with_configured_judge

    with _sessions() as sessions:
        tally = recheck_with_configured_judge(sessions, Settings())
    if tally is None:
        raise ValueError("no LLM judge in the pool file's [gatekeeper] table: mark battles with `arena unsure mark`")
    print(f"re-checked {tally.asked - tally.failed} of {tally.asked}: {tally.not_geographic} not geographic")
    return 0


class _sessions:
    """A sessionmaker on the configured database, disposed of afterwards."""

    def __enter__(self) -> Any:
        from arena.config import Settings
        from arena.db.ready import open_engine
        from arena.db.session import make_sessionmaker

        self.engine = open_engine(Settings().resolved_database_url)
        return make_sessionmaker(self.engine)

    def __exit__(self, *exc: object) -> None:
        self.engine.dispose()
