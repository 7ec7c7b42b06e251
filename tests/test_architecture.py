"""The package layering holds: imports point down only (import-linter's
contracts in pyproject.toml), and `arena --help` stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


class TestImportContracts:
    def test_no_cycle_or_back_arrow(self) -> None:
        result = subprocess.run(
            [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        assert "0 broken" in result.stdout


class TestStartUp:
    def test_help_imports_no_heavy_library(self) -> None:
        # What made `arena --help` take seconds: scikit-learn, scipy, pyarrow, pandas, the OCR runtime.
        probe = (
            "import sys, arena.cli\n"
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
            "{'sklearn', 'scipy', 'pyarrow', 'pandas', 'onnxruntime', 'rapidocr_onnxruntime', 'trafilatura'})\n"
            "print(','.join(heavy))"
        )
        result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "", f"`import arena.cli` loads {result.stdout.strip()}"
