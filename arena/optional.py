"""Importing the parts of the arena that are optional or not written yet."""

from __future__ import annotations

import importlib
from types import ModuleType


def optional_import(name: str) -> ModuleType | None:
    """The module, or None when it (or its package) does not exist.

    An ImportError raised *inside* an existing module still propagates, so a
    broken module is never mistaken for a missing one.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            return None
        raise
