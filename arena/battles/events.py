"""Server-sent events of a battle, and their wire format.

Events: `delta {side, text, html}`, `step {side, ...}`, `done {side, html,
latency_ms}`, `error {side, message}`, `ready {}`, and always last
`end {status}`; or `reconnect {}` from a replica that is stopping, which then
closes the stream so the browser reconnects.
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
KEEP_ALIVE_INTERVAL = 15.0  # seconds of quiet after which a stream gets KEEP_ALIVE
# Seconds a side's later deltas wait before they are written, so that both sides' deltas
# and a fast model's next tokens share one write: under 500 battles at once the writes to
# the watchers were a third of the replica's loop (benchmarks/http.py). A side's first
# delta is never held back: the time to first token is what a voter feels.
DELTA_GATHER = 0.03
# A dropped connection is retried after one second, well inside the runner's
# grace before it abandons a battle nobody watches.
RECONNECT_HINT = "retry: 1000\n\n"
# Sent by a replica that is shutting down before it closes a stream without `end`: the
# browser's EventSource reconnects by itself (through the proxy, to another replica).
RECONNECT = "event: reconnect\ndata: {}\n\n"
