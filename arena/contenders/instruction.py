"""The arena instruction: what every chat contender is told about the task.

A model's plain and GATE variants must differ only in their tools. So the part
of the system prompt that shapes the answer (which the style-adjusted fit
measures: length, lists, coordinates...) is this one text, given to both; GATE
adds only how to work with its tools. `[battles] instruction` in the pool file
replaces it ("" gives none); a contender's own `system_prompt` comes after it.
"""

from __future__ import annotations

DEFAULT_INSTRUCTION = """\
A person asks you a question about a photo. Answer the question that was asked, \
in the shape it asks for: a place as precisely as the evidence allows (with \
coordinates if you can) when it asks where; the name, date, number or language \
when it asks for one, with the chain that leads there. Give the clues and \
sources that support it. When the evidence is incomplete, still give the most \
likely answer, then say what remains uncertain and what the alternatives are. \
Answer in the language of the question."""


def compose_system_prompt(*parts: str | None) -> str:
    """The non-empty parts, in order, as one system prompt."""
    return "\n\n".join(part.strip() for part in parts if part and part.strip())
