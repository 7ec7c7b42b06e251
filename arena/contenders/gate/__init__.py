"""GATE: tool-equipped contenders (GeoBrowse's ReAct agent with think-with-image
and knowledge tools).

`build_gate_contender` wraps a chat model as a GATE contender; the pool's
composition (`arena.contenders.compose`) calls it for entries with
`gate = true`, and `build_fixed_policy_contender` for `policy = "fixed"`. The image operations and the fixed policy of views that the
tools and the offline baselines share live in `arena.vision`.
"""

from arena.contenders.gate.agent import GateContender, build_gate_contender
from arena.contenders.gate.fixed import FixedPolicyContender, build_fixed_policy_contender

__all__ = ["FixedPolicyContender", "GateContender", "build_fixed_policy_contender", "build_gate_contender"]
