"""The prompt gatekeeper: only geographic questions start a battle.

gatekeeper = build_gatekeeper(pool_config, deps)
verdict = await gatekeeper.classify(prompt)
if not verdict.geographic:
    ...  # 422 {"error": "not_geographic", "message": verdict.reason}, Content-Language: verdict.lang
"""

from arena.gatekeeper.gatekeeper import (
    Gatekeeper,
    Verdict,
    build_gatekeeper,
    rejection_message,
)

__all__ = ["Gatekeeper", "Verdict", "build_gatekeeper", "rejection_message"]
