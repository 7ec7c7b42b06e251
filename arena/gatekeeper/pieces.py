"""A prompt cut into the pieces of a multilingual encoder's vocabulary.

The offline model (model.py) gives each piece of XLM-R's vocabulary that its
training prompts or concept tables use one learnt number, folded from the
piece's multilingual-e5-small embedding when the model is fitted. A word no
training prompt has is still cut into known pieces, so the pieces carry what
one language's prompts taught to words of another.

The pieces live in `data/pieces.model`, a sentencepiece unigram model that
the build writes (`python -m gatekeeper_build fit`), read here by
sentencepiece itself. Its piece 0 is the unknown; piece k is the model's
piece weight k - 1.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import sentencepiece

DATA_DIR = Path(__file__).resolve().parent / "data"
PIECES_PATH = DATA_DIR / "pieces.model"
MAX_CHARS = 4000  # as features.MAX_CHARS


class Tokeniser:
    """The unigram model's best cut of a prompt (NFKC, one space between words)."""

    def __init__(self, path: Path = PIECES_PATH) -> None:
        self._processor = sentencepiece.SentencePieceProcessor(model_file=str(path))

    def __len__(self) -> int:
        return int(self._processor.get_piece_size()) - 1  # the unknown has no weight

    def ids(self, text: str) -> list[int]:
        """The weight index of each known piece of `text` (a character no piece covers is skipped)."""
        words = " ".join(unicodedata.normalize("NFKC", text[:MAX_CHARS]).split())
        return [k - 1 for k in self._processor.encode(words) if k]
