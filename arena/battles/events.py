"""Server-sent events of a battle, and their wire format.

Events: `delta {side, text, html}`, `step {side, ...}`, `done {side, html,
latency_ms}`, `error {side, message}`, `ready {}`, and always last
`end {status}`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BattleEvent:
    name: str
    data: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> str:
        return f"event: {self.name}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n"


KEEP_ALIVE = ": keep-alive\n\n"
# A dropped connection is retried after one second, well inside the runner's
# grace before it abandons a battle nobody watches.
RECONNECT_HINT = "retry: 1000\n\n"
