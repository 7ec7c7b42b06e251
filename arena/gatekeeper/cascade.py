"""The verdict with the encoder's second opinion (`[gatekeeper] encoder = true`): the offline
model's logit, and where it is within BAND of zero on a prompt of at most LONGEST_ASKED
characters, the mean of it and the student's (encoder.py).

The student is asked after the offline model, on every core. Started beside it instead (on one
core each, for prompts of 600 characters or more, and waited for only when the offline model
turned out unsure), an unsure long prompt took longer, not less: 30 ms against 23 at 1,000
characters, on two cores that the two models' threads then share (the data README, "Thirty-two
pieces, and the student beside the offline model").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.gatekeeper.encoder import Encoder
    from arena.gatekeeper.model import OfflineModel

# The offline logit within which the encoder is asked. Held out by source with the frozen twelve
# layers (73,723 rows): asked for 5% of prompts at 1 (0.9754), 12% at 2 (0.9785), 21% at 3 (0.9792).
BAND = 2.0
# The longest prompt the student is asked about: the labelled prompts' longest (900 characters; the
# geographic ones stop at 289), so that every figure of the second opinion is of prompts this long
# or shorter. Past it nothing says the student helps (it reads a prompt's first 64 pieces, some
# 250-400 characters), and an unsure prompt would pay both models, 9-12 ms at 2,000 characters:
# the offline model, which reads all of it, decides alone, as it does in the default mode.
LONGEST_ASKED = 900


def asks(offline: Any, chars: Any) -> Any:
    """Whether the student is asked, given the offline model's logit and the prompt's length in
    characters (numbers, or arrays of them)."""
    return (abs(offline) < BAND) & (chars <= LONGEST_ASKED)


def combine(offline: Any, encoder: Any) -> Any:
    """The verdict's logit when the encoder was asked: the mean of the two."""
    return (offline + encoder) / 2


class Cascade:
    """The offline model, and the student where it is unsure (the gatekeeper's and the benchmark's)."""

    def __init__(self, model: OfflineModel, encoder: Encoder) -> None:
        self.model, self.encoder = model, encoder

    def logit(self, text: str, lang: str | None = None) -> tuple[float, bool]:
        """The verdict's logit, and whether the student was asked."""
        z = self.model.logit(text, lang)
        if not asks(z, len(text)):
            return z, False
        return combine(z, self.encoder.logit(text)), True
