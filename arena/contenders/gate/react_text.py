"""The ReAct text protocol of the GATE agent (agent.py) and the fixed policy (fixed.py): where
the final answer starts in streamed text (`AnswerSplitter`), and, for a model without native
function calling, its tool calls written as `Action: {json}` (`parse_action`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from arena.contenders.base import ToolCall

# Live streaming starts only at a marker opening a line, so "...before the final
# answer: let me crop" in a thought is not taken for the answer; once a turn has
# ended without a tool call, a marker anywhere still trims the reasoning before it.
FINAL_MARKER = re.compile(r"(?im)^[ \t>*_#]*final answer(?:\*\*|__)?\s*[:：](?:\*\*|__)?[ \t]*\n?")
FINAL_MARKER_ANYWHERE = re.compile(r"(?i)final answer(?:\*\*|__)?\s*[:：](?:\*\*|__)?[ \t]*\n?")
ACTION_MARKER = re.compile(r"(?im)(?:^|(?<=[\s>*_#.]))action[*_]*\s*[:：]\s*")


class AnswerSplitter:
    """Decides, as text streams in, which part is the final answer.

    Text after a `Final answer:` marker is the answer and streams at once. In a
    turn that must answer, everything streams (a leading marker is dropped),
    except in text mode, where the turn is held to its end and an `Action:` the
    model still writes is cut off.
    Otherwise the text is held: if the turn ends without a tool call it is the
    answer after all, else it was the thought that led to the call.
    """

    HOLD = 40  # characters held in a final turn to spot a leading marker
    # A marker completed by new text starts at most this far before it: searching only
    # there keeps a long turn linear (searching all the text per delta was quadratic).
    LOOKBACK = 200

    def __init__(self, *, final: bool, fallback: bool) -> None:
        self.final = final
        self.fallback = fallback
        self.text = ""
        self.answering = False
        self.emitted = False
        self._sent = 0  # characters of self.text already sent as answer
        self._action_at: int | None = None  # where the first Action marker starts
        self._held_marker = False  # a marker was seen after an Action (so not the answer's)

    def feed(self, piece: str) -> list[str]:
        start = max(0, len(self.text) - self.LOOKBACK)
        self.text += piece
        if self.final and self.fallback:
            return []  # a text-mode model's last turn may still end in an Action: held to the end
        if not self.answering:
            marker = FINAL_MARKER.search(self.text, start)
            if self.fallback and self._action_at is None:
                action = ACTION_MARKER.search(self.text, start)
                self._action_at = action.start() if action else None
            if marker and not (self._action_at is not None and self._action_at < marker.start()):
                self.answering = True
                self._sent = marker.end()
            elif marker:
                self._held_marker = True
                return []
            elif self.final and len(self.text) >= self.HOLD and not self._held_marker:
                self.answering = True
                self._sent = 0
            else:
                return []
        return self._flush()

    def finish(self) -> list[str]:
        if not self.answering:
            marker = FINAL_MARKER_ANYWHERE.search(self.text)
            self._sent = marker.end() if marker else 0
            action = ACTION_MARKER.search(self.text, self._sent) if self.fallback else None
            if action:
                # a tool call written where none is offered is no part of the answer
                self.text = self.text[: action.start()].rstrip(" \t\n*_#>")
                if not marker:
                    self.text = strip_thought(self.text)
            self.answering = True
        return self._flush()

    def _flush(self) -> list[str]:
        out = self.text[self._sent :]
        if not self.emitted:
            out = out.lstrip()
        self._sent = len(self.text)
        if out:
            self.emitted = True
            return [out]
        return []


def parse_action(text: str, ordinal: int = 0) -> tuple[str, ToolCall | None, str]:
    """Read `Action: {"tool": ..., "arguments": {...}}` from a fallback-mode turn.

    Returns (thought, call, error): the text before the action, the call if
    it could be read, else a message telling the model what was wrong."""
    match = ACTION_MARKER.search(text)
    if not match:
        return text, None, ""
    thought = text[: match.start()].rstrip(" \t\n*_#>").strip()
    rest = text[match.end() :]
    brace = rest.find("{")
    if brace < 0:
        return thought, None, 'after "Action:" write one JSON object: {"tool": "<name>", "arguments": {...}}'
    try:
        obj, _ = json.JSONDecoder().raw_decode(rest[brace:])
    except json.JSONDecodeError as exc:
        return thought, None, f"the Action is not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(obj, dict):
        return thought, None, "the Action must be a JSON object"
    name = obj.get("tool", obj.get("name", obj.get("action")))
    arguments = obj.get("arguments", obj.get("args", obj.get("action_input", {})))
    if not isinstance(name, str) or not name:
        return thought, None, 'the Action needs a "tool" name'
    if not isinstance(arguments, dict):
        return thought, None, '"arguments" must be a JSON object'
    return thought, ToolCall(f"text_{ordinal}", name, arguments, json.dumps(arguments)), ""


def strip_thought(text: str) -> str:
    return re.sub(r"(?i)^\s*\**thought\**\s*:\s*", "", text).strip()


def action_text(calls: Sequence[ToolCall]) -> str:
    return "".join(
        "\nAction: " + json.dumps({"tool": c.name, "arguments": c.arguments}, ensure_ascii=False) for c in calls
    )


FALLBACK_FORMAT = """To call a tool, end your reply with exactly:
Thought: <your reasoning>
Action: {"tool": "<tool name>", "arguments": {<arguments as JSON>}}
Then stop: the result comes back as "Observation: ...". One action per reply. The tools:"""
