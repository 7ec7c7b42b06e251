"""The verdict with the encoder's second opinion (`[gatekeeper] encoder = true`): the offline
model's logit, and where it is within BAND of zero, the mean of it and the student's (encoder.py).

A long prompt costs the offline model most of a verdict (its n-grams and pieces over every word:
6-10 ms at 2,000 characters), and the student reads only its first pieces. Asked in turn, an
unsure long prompt would pay both. So from SIDE_BY_SIDE characters on, the student starts at the
same time, on one thread (the other core), and is waited for only if the offline model turns out
unsure; otherwise it is cancelled, or its answer dropped. The verdict is the same either way:
only when its parts are computed changes, at the cost of a student's run (a few milliseconds of
a core) that most long prompts do not need.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.gatekeeper.encoder import Encoder
    from arena.gatekeeper.model import OfflineModel

# The offline logit within which the encoder is asked. Held out by source with the frozen twelve
# layers (73,723 rows): asked for 5% of prompts at 1 (0.9754), 12% at 2 (0.9785), 21% at 3 (0.9792).
BAND = 2.0
SIDE_BY_SIDE = 600  # characters from which the student starts beside the offline model


def unsure(offline: Any) -> Any:
    """Whether the encoder is asked, given the offline model's logit (a float or an array)."""
    return abs(offline) < BAND


def combine(offline: Any, encoder: Any) -> Any:
    """The verdict's logit when the encoder was asked: the mean of the two."""
    return (offline + encoder) / 2


class Cascade:
    """The offline model, and the student where it is unsure. Thread-safe, as both models are."""

    def __init__(self, model: OfflineModel, encoder: Encoder) -> None:
        self.model, self.encoder = model, encoder
        self._beside = ThreadPoolExecutor(1, thread_name_prefix="student-beside")

    def logit(self, text: str, lang: str | None = None) -> tuple[float, bool]:
        """The verdict's logit, and whether the student was asked."""
        early = self._beside.submit(self.encoder.logit, text, 1) if len(text) >= SIDE_BY_SIDE else None
        z = self.model.logit(text, lang)
        if not unsure(z):
            if early is not None:
                early.cancel()  # still queued behind another prompt's: never run
            return z, False
        student = early.result() if early is not None else self.encoder.logit(text)
        return combine(z, student), True

    def settle(self) -> None:
        """Wait until no student started beside a verdict is running (a benchmark times each
        verdict alone, as uploads seconds apart are)."""
        self._beside.submit(int).result()
