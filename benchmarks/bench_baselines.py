"""The offline baselines on GeoBrowse-format data, graded offline: `arena
bench` run for real, as a person runs it, into a fresh SQLite database.

For each dataset file (default: both levels of the shared sample) and each
offline contender (`ocr-geolocator`, `ocr-geolocator+gate`) it prints the
accuracy with its Wilson 95% interval, the mean and median seconds per
instance (one run at a time, so the times do not compete), tool calls per
instance and the top tools. `--json FILE` keeps the reports.

    GEOARENA_SHARED=../shared .venv/bin/python benchmarks/bench_baselines.py [--data DIR] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("GEOARENA_SHARED", ROOT.parent / "shared")) / "data" / "geobrowse-sample"
CONTENDERS = "ocr-geolocator,ocr-geolocator+gate"
ARENA = str(Path(sys.executable).parent / "arena")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--files", default="level1_en.jsonl,level2_en.jsonl")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    reports = []
    with tempfile.TemporaryDirectory(prefix="bench-baselines-") as tmp:
        env = {
            **os.environ,
            "ARENA_DATA_DIR": tmp,
            "ARENA_DATABASE_URL": "",
            "ARENA_CONFIG": str(Path(tmp) / "none.toml"),
        }
        subprocess.run([ARENA, "db", "upgrade"], env=env, check=True, capture_output=True)
        for name in args.files.split(","):
            out = Path(tmp) / f"{name}.report.json"
            started = time.monotonic()
            done = subprocess.run(
                [
                    ARENA,
                    "bench",
                    "--dataset",
                    str(args.data / name),
                    "--contenders",
                    CONTENDERS,
                    "--concurrency",
                    str(args.concurrency),
                    "--timeout",
                    "900",
                    "--json",
                    str(out),
                ],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                sys.exit(f"arena bench failed on {name}: {done.stderr.strip()}")
            report = json.loads(out.read_text())
            report["wall_seconds"] = round(time.monotonic() - started, 1)
            reports.append(report)
    print(
        f"{'dataset':<18} {'contender':<22} {'n':>3} {'correct':>7} {'accuracy':>9} {'Wilson 95%':>16} "
        f"{'mean s':>7} {'median s':>8} {'tools':>6}  top tools"
    )
    for report in reports:
        for row in report["contenders"]:
            acc = row["accuracy"]
            share = next(iter(row["tool_share"].values()), {})
            top = ", ".join(f"{t} {s:.0%}" for t, s in list(share.items())[:3]) or "-"
            print(
                f"{report['suite']:<18} {row['contender']:<22} {acc['n']:>3} {acc['k']:>7g} {acc['rate']:>9.1%} "
                f"{'[' + format(acc['ci_low'], '.1%') + ', ' + format(acc['ci_high'], '.1%') + ']':>16} "
                f"{row['time']['mean_s']:>7.2f} {row['time']['median_s']:>8.2f} {row['tool_calls']:>6.1f}  {top}"
            )
        print(f"{report['suite']:<18} graded by: {report['grader_label']}; wall {report['wall_seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(reports, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
