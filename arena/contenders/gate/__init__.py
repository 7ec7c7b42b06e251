"""GATE: tool-equipped contenders (GeoBrowse's ReAct agent with think-with-image
and knowledge tools).

`build_gate_contender` wraps a chat model as a GATE contender; the pool's
composition (`arena.contenders.compose`) calls it for entries with
`gate = true`. The image operations and the fixed policy of views that the
tools and the offline baselines share live in `arena.vision`.
"""

from arena.contenders.gate.agent import GateContender, build_gate_contender

__all__ = ["GateContender", "build_gate_contender"]
