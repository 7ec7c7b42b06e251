"""GATE tools: think-with-image (`image`), knowledge (`web`), code (`code`).

`base` says what a tool is; `arena.contenders.gate.toolbox` picks the tools a pool offers.
"""

from arena.contenders.gate.tools.base import (
    ImageToolError,
    Tool,
    ToolFailure,
    ToolResult,
    check_arguments,
)

__all__ = ["ImageToolError", "Tool", "ToolFailure", "ToolResult", "check_arguments"]
