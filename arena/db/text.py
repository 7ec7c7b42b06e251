"""Text the databases can store. PostgreSQL refuses NUL in text and JSON, and no UTF-8
codec takes a lone surrogate (which JSON's `\\ud800` escapes produce): either one reaching an
INSERT fails the whole request or battle after other work was done."""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# C0, DEL, C1 (what broken UTF-8 turns into when a parser falls back to Latin-1) and surrogates
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates replaced by U+FFFD (for model output: kept, not refused)."""
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def can_store(text: str) -> bool:
    """False when `text` holds a NUL or a lone surrogate, which `storable` would replace."""
    return not _UNSTORABLE.search(text)


def storable_json(value: Any) -> Any:
    """`storable` applied to every string of a JSON-like value (keys included)."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable_json(k): storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_json(v) for v in value]
    return value


def is_storable_text(text: str, allow: str = "") -> bool:
    """False when `text` has control characters (other than those in `allow`) or lone surrogates:
    for input a person typed, which is refused rather than altered."""
    return all(ch in allow for ch in _CONTROL.findall(text))
