"""The code tool's staged copy of numpy (made when the venv sits in a folder the sandbox
user cannot read, 72 MB each) is removed when the process that made it exits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import os, sys
from pathlib import Path
from arena.contenders.gate.tools.sandbox_packages import sandbox_packages
staged = sandbox_packages(Path(sys.argv[1]), ("numpy",))["numpy"]
print(staged, os.path.isfile(os.path.join(staged, "__init__.py")), flush=True)
"""


def test_the_staged_copy_is_removed_at_exit(tmp_path: Path) -> None:
    private = tmp_path / "checkout"
    package = private / "site" / "numpy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("# a stand-in\n")
    private.chmod(0o700)  # others cannot pass: the sandbox user would not reach the venv
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(private / "site")], capture_output=True, text=True, timeout=120, check=True
    )
    staged, copied = done.stdout.split()
    assert copied == "True" and not staged.startswith(str(private)), done.stdout
    assert not Path(staged).parent.exists(), f"{Path(staged).parent} was left behind"
