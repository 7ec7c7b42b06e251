"""GATE tools, the common part: what a tool is, how its arguments are checked, and its result.

A tool has a `ToolSpec` (name, description, JSON-schema parameters) offered
to the model, and an async `run(arguments, registry)`. Arguments come from a
model, so they are checked against the schema first; `ToolFailure` carries a
message the model reads to correct itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arena.contenders.base import ToolSpec

if TYPE_CHECKING:
    from arena.contenders.gate.registry import ImageRegistry, RegisteredImage


class ToolFailure(Exception):
    """A tool could not do what was asked; the message is the observation."""


class ImageToolError(ToolFailure, ValueError):
    """Arguments an image tool cannot use; the message tells the model how to fix them."""


@dataclass(frozen=True)
class ToolResult:
    observation: str  # what the model reads
    images: tuple[RegisteredImage, ...] = ()  # images this step produced
    summary: str = ""  # what the voter reads; defaults to the observation
    links: tuple[str, ...] = ()  # result pages, in order (search tools), for a policy to visit


Runner = Callable[[dict[str, Any], "ImageRegistry"], Awaitable[ToolResult]]


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Runner
    timeout: float = 30.0  # seconds, before the agent gives up on this call

    @property
    def name(self) -> str:
        return self.spec.name


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def check_arguments(schema: dict[str, Any], arguments: object) -> dict[str, Any]:
    """Check a model's arguments against the small JSON-schema subset our
    tools use (types, required, enum, minimum/maximum, items, no extra keys)
    and fill in defaults. Raises `ToolFailure` naming the first problem."""
    if not isinstance(arguments, dict):
        raise ToolFailure("arguments must be a JSON object")
    props: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        raise ToolFailure(f"unknown argument(s) {', '.join(unknown)}; expected: {', '.join(props) or 'none'}")
    missing = [k for k in schema.get("required", []) if k not in arguments]
    if missing:
        raise ToolFailure(f"missing required argument(s): {', '.join(missing)}")
    out: dict[str, Any] = {}
    for key, prop in props.items():
        if key in arguments:
            out[key] = _check_value(key, prop, arguments[key])
        elif "default" in prop:
            out[key] = prop["default"]
    return out


def _check_value(path: str, prop: dict[str, Any], value: Any) -> Any:
    kind = prop.get("type")
    if kind:
        ok = isinstance(value, _TYPES[kind]) and not (kind != "boolean" and isinstance(value, bool))
        if kind == "number" and isinstance(value, bool):
            ok = False
        if not ok:
            raise ToolFailure(f"{path} must be of type {kind}, not {type(value).__name__}")
    if "enum" in prop and value not in prop["enum"]:
        raise ToolFailure(f"{path} must be one of {prop['enum']}")
    if kind in ("number", "integer"):
        if "minimum" in prop and value < prop["minimum"]:
            raise ToolFailure(f"{path} must be at least {prop['minimum']}")
        if "maximum" in prop and value > prop["maximum"]:
            raise ToolFailure(f"{path} must be at most {prop['maximum']}")
    if kind == "string" and "maxLength" in prop and len(value) > prop["maxLength"]:
        raise ToolFailure(f"{path} is longer than {prop['maxLength']} characters")
    if kind == "array":
        if "maxItems" in prop and len(value) > prop["maxItems"]:
            raise ToolFailure(f"{path} has more than {prop['maxItems']} items")
        if "minItems" in prop and len(value) < prop["minItems"]:
            raise ToolFailure(f"{path} needs at least {prop['minItems']} items")
        if "items" in prop:
            value = [_check_value(f"{path}[{i}]", prop["items"], v) for i, v in enumerate(value)]
    return value
