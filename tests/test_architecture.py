"""The package layering holds: imports point down only (import-linter's
contracts in pyproject.toml), and `arena --help` stays light."""

from __future__ import annotations

import os
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

    def test_each_command_is_found_where_the_cli_looks_for_it(self) -> None:
        # `arena COMMAND` imports only COMMAND_MODULES[COMMAND]: a command added to
        # a package's cli module but not to the table would be missing from it
        import argparse
        import importlib

        from arena.cli import COMMAND_MODULES

        for module in set(COMMAND_MODULES.values()):
            parser = argparse.ArgumentParser()
            sub = parser.add_subparsers()
            importlib.import_module(module).register(sub)
            registered = set(sub.choices)
            assert registered == {c for c, m in COMMAND_MODULES.items() if m == module}, module

    def test_rank_from_a_file_loads_no_database_or_web_library(self, tmp_path: Path) -> None:
        # `arena rank --input` is timed end to end (benchmarks/ratings.py --command):
        # SQLAlchemy, the web stack, scikit-learn and scipy's k-d tree cost it a
        # second or more of start-up and it needs none of them
        from tests.export.test_format import row, write

        votes = write(tmp_path / "votes.parquet", [row(i) for i in range(30)], "parquet")
        probe = (
            "import sys\n"
            "from arena.cli import main\n"
            f"assert main(['rank', '--input', {str(votes)!r}, '--output', {str(tmp_path / 'out.json')!r}]) == 0\n"
            "heavy = {'sqlalchemy', 'fastapi', 'starlette', 'sklearn', 'httpx', 'scipy.spatial', 'scipy.sparse.csgraph'}\n"
            "print('loaded:' + ','.join(sorted(m for m in heavy if m in sys.modules)))"
        )
        env = {**os.environ, "ARENA_CONFIG": str(tmp_path / "absent.toml")}
        result = subprocess.run(
            [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[-1] == "loaded:", f"arena rank --input {result.stdout.strip()}"
        assert (tmp_path / "out.json").exists()

    def test_the_rank_command_skips_pandas_and_pyarrow_still_reaches_it(self, tmp_path: Path) -> None:
        # pyarrow imports pandas at its first conversion (half a CPU-second of
        # `arena rank`); the console command lets that look fail, and pyarrow
        # must still hand over DataFrames afterwards (its conversions in that
        # process no longer special-case pandas objects: rank converts none)
        from tests.export.test_format import row, write

        votes = write(tmp_path / "votes.parquet", [row(i) for i in range(30)], "parquet")
        probe = (
            "import sys\n"
            "from arena.cli import main\n"
            f"sys.argv = ['arena', 'rank', '--input', {str(votes)!r}, '--output', {str(tmp_path / 'out.json')!r}]\n"
            "assert main() == 0\n"
            "print('pandas loaded:', 'pandas' in sys.modules)\n"
            "import pandas as pd, pyarrow as pa\n"
            "assert pa.table({'x': [1, 2]}).to_pandas().shape == (2, 1)\n"
        )
        env = {**os.environ, "ARENA_CONFIG": str(tmp_path / "absent.toml")}
        result = subprocess.run(
            [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[-1] == "pandas loaded: False"
