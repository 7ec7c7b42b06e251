"""Python packages the code sandbox may import (numpy), bound read-only into it by code.py: the
sandbox runs as `nobody` under root, so a package inside a private checkout is copied out."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import tempfile
import weakref
from pathlib import Path


def numpy_packages() -> dict[str, str]:
    """numpy's folders (numpy.libs holds the OpenBLAS its wheel bundles) by name. The
    sandbox's interpreter must be the same minor version."""
    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.origin:
        return {}
    return sandbox_packages(Path(spec.origin).resolve().parent.parent, ("numpy", "numpy.libs"))


def sandbox_packages(site: Path, names: tuple[str, ...]) -> dict[str, str]:
    """Folders the sandbox user can read holding the packages `names` of `site`: the
    packages themselves when every folder above them lets others through, else (a venv inside
    a private checkout) a copy made once per process and removed when the process exits."""
    present = tuple(name for name in names if (site / name).is_dir())
    if all(os.stat(p).st_mode & 0o005 == 0o005 for p in (site, *site.parents) if str(p) != "/"):
        return {name: str(site / name) for name in present}
    stage = _staged(site, present)
    return {name: str(stage.path / name) for name in present}


class _Stage:
    """A temporary folder removed at exit (the copy of numpy is 72 MB; one per process)."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="gate-site-"))
        self.path.chmod(0o755)  # the sandbox may run as nobody
        weakref.finalize(self, shutil.rmtree, str(self.path), True)


@functools.cache
def _staged(site: Path, names: tuple[str, ...]) -> _Stage:
    stage = _Stage()
    for name in names:
        shutil.copytree(site / name, stage.path / name)
    return stage
