"""Issue 10 figures for GATE's code sandbox: memory of one call as a whole, and zombies
after 20 calls when the server is pid 1.

    python benchmarks/hardening_sandbox.py [--processes 8]

The memory hog forks up to `--processes` processes; each takes all the memory it can and
fills /tmp and /dev/shm. The figure is the peak of resident memory of every process of the
sandbox plus what its tmpfs holds, sampled every 20 ms. Run as root (reads /proc of the
sandbox's processes). Prints one line per figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as `python benchmarks/NAME.py`, this folder comes first on the import path, and its
# http.py (the name for the HTTP benchmark) would shadow the standard library's http
# module, which httpx imports: the checkout takes the folder's place.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena.contenders.gate.tools.code import CodeSandbox  # noqa: E402
from tests.contenders.gate.test_sandbox_bounds import ZOMBIE_SCRIPT, descendants, footprint  # noqa: E402

HOG = """
import os, time
for _ in range({forks}):
    try:
        if os.fork() == 0:
            break
    except OSError:
        break
chunks = []
try:
    while len(chunks) < 250:  # at most 1 GB each, so the old sandbox does not take the host down
        chunk = bytearray(4 * 1024 * 1024)
        chunk[::4096] = b"x" * len(chunk[::4096])
        chunks.append(chunk)
except MemoryError:
    pass
for folder in ("/tmp", "/dev/shm"):
    try:
        with open(f"{{folder}}/fill-{{os.getpid()}}", "wb") as f:
            while True:
                f.write(b"y" * (1 << 20))
                f.flush()
    except OSError:
        pass
time.sleep(2)
"""


async def sandbox_peak(forks: int) -> tuple[float, int]:
    box = CodeSandbox(timeout=15)
    peak, processes, stop = [0], [0], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            pids = descendants(os.getpid())
            rss, tmpfs = footprint(pids)
            peak[0] = max(peak[0], rss + tmpfs)
            processes[0] = max(processes[0], len(pids))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        await box.run(HOG.format(forks=forks))
    finally:
        stop.set()
        watcher.join()
    return peak[0] / 2**20, processes[0]


def zombies_as_pid_one() -> str:
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", ZOMBIE_SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.stdout.split()[-1] if done.returncode == 0 else f"failed: {done.stderr[-200:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    args = parser.parse_args()
    box = CodeSandbox()
    mb, processes = asyncio.run(sandbox_peak(args.processes - 1))
    print(
        f"sandbox memory of one call: peak {mb:.0f} MB with {processes} processes "
        f"(ceiling {box.memory_mb} MB, {box.max_processes} processes allowed)"
    )
    print(f"zombies after 20 code calls as pid 1: {zombies_as_pid_one()}")


if __name__ == "__main__":
    main()
