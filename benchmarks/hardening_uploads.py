"""Issue 10 figures for the upload path and the answer stream, against a real `arena serve`.

    python benchmarks/hardening_uploads.py [--answer-mb 50] [--checkout DIR]

* 30 uploads of a 40-megapixel PNG (about 130 KB) with a non-geographic prompt, one
  after the other: their statuses, and the server's CPU seconds for all 30;
* 30 parallel uploads of a real photo from one address under the 10/minute limit: how many
  were accepted;
* a battle whose contender streams an answer of `--answer-mb` MB (a loopback
  OpenAI-compatible server) while another client times `GET /` every 20 ms: the median and
  p99 of those, the bytes of events the watcher received and the server's peak memory.

`--checkout` runs the server from another checkout (e.g. a worktree of an older commit) to
measure "before". SQLite, offline gatekeeper; nothing leaves 127.0.0.1.
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
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.servers import free_port, serve_in_thread  # noqa: E402
from tests.servers.openai_compatible import OpenAICompatibleServer  # noqa: E402
from tests.servers.processes import cpu_seconds, peak_rss_mb  # noqa: E402

SHARED = Path(os.environ.get("GEOARENA_SHARED", ROOT.parent / "shared"))
PHOTO = SHARED / "data" / "geobrowse-sample" / "images" / "level1-1.jpg"


def big_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8000, 5000), (120, 30, 40)).save(out, "PNG", optimize=True)
    return out.getvalue()


def start_server(checkout: Path, data: Path, pool: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "ARENA_DATA_DIR": str(data),
        "ARENA_CONFIG": str(pool),
        "TEST_MODEL_KEY": "k",
        "ARENA_BATTLE_TIMEOUT": "600",
        "ARENA_BATTLES_PER_MINUTE": "10",
        "PYTHONPATH": str(checkout),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "serve", "--port", str(port)],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("the arena did not start")


def upload(
    client: httpx.Client | httpx.AsyncClient,
    photo: bytes,
    prompt: str,
    kind: str = "image/png",  # type: ignore[no-untyped-def]
    address: str = "10.0.0.1",
):
    # each phase from its own address (the server trusts X-Forwarded-For from 127.0.0.1), so
    # one phase's rate limit does not touch the next
    return client.post(
        "/api/battles",
        files={"image": ("p", photo, kind)},
        data={"prompt": prompt},
        headers={"X-Forwarded-For": address},
    )


async def parallel_uploads(url: str) -> list[int]:
    photo = PHOTO.read_bytes()
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        responses = await asyncio.gather(
            *(upload(client, photo, "Where was this taken?", "image/jpeg", "10.0.0.2") for _ in range(30))
        )
    return [r.status_code for r in responses]


async def long_answer(url: str) -> tuple[list[float], int, str]:
    photo = PHOTO.read_bytes()
    async with httpx.AsyncClient(base_url=url, timeout=900) as client:
        created = (await upload(client, photo, "Where was this taken?", "image/jpeg", "10.0.0.3")).json()
        received, status = 0, ""
        latencies: list[float] = []
        done = asyncio.Event()

        async def watch() -> None:
            nonlocal received, status
            async with client.stream("GET", created["events_url"]) as events:
                async for chunk in events.aiter_bytes():
                    received += len(chunk)
                    if b"event: end" in chunk:
                        status = chunk.decode("utf-8", "replace").rsplit("data: ", 1)[-1].strip()
            done.set()

        async def probe() -> None:
            async with httpx.AsyncClient(base_url=url, timeout=120) as other:
                while not done.is_set():
                    started = time.perf_counter()
                    await other.get("/")
                    latencies.append(time.perf_counter() - started)
                    await asyncio.sleep(0.02)

        await asyncio.gather(watch(), probe())
    return latencies, received, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answer-mb", type=float, default=50)
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument(
        "--max-answer-chars",
        type=int,
        default=None,
        help="ARENA_MAX_ANSWER_CHARS for the server (default: its own default)",
    )
    args = parser.parse_args()
    model_server = OpenAICompatibleServer()
    with serve_in_thread(model_server.app) as model_url, tempfile.TemporaryDirectory() as tmp:
        pool = Path(tmp) / "arena.toml"
        answer = int(args.answer_mb * 1e6)
        pool.write_text(
            "\n".join(
                [
                    "[[contenders]]",
                    f'name = "{name}"',
                    'provider = "openai"',
                    f'base_url = "{model_url}/v1"',
                    f'model = "{model}"',
                    'api_key_env = "TEST_MODEL_KEY"',
                    "timeout = 600",
                    "",
                ][i]
                for name, model in (("long-a", f"long-{answer}"), ("long-b", "echo-b"))
                for i in range(8)
            )
            + '\n[gatekeeper]\nmode = "offline"\n'
        )
        port = free_port()
        if args.max_answer_chars is not None:
            os.environ["ARENA_MAX_ANSWER_CHARS"] = str(args.max_answer_chars)
        server = start_server(args.checkout, Path(tmp) / "data", pool, port)
        url = f"http://127.0.0.1:{port}"
        try:
            png = big_png()
            with httpx.Client(base_url=url, timeout=120) as client:
                upload(client, b"x", "What breed is this dog?", address="10.0.0.9")  # trains the gatekeeper
                before = cpu_seconds(server.pid)
                statuses = [upload(client, png, "What breed is this dog?").status_code for _ in range(30)]
                spent = cpu_seconds(server.pid) - before
            print(
                f"30 refused uploads of a {len(png) / 1e3:.0f} KB 40 MP PNG: statuses "
                f"{ {s: statuses.count(s) for s in sorted(set(statuses))} }, first 429 at "
                f"#{statuses.index(429) + 1 if 429 in statuses else '-'}, server CPU {spent:.2f} s"
            )
            parallel = asyncio.run(parallel_uploads(url))
            print(
                f"30 parallel uploads under a 10/min limit: {parallel.count(201)} accepted, "
                f"{parallel.count(429)} refused with 429"
            )
            latencies, received, status = asyncio.run(long_answer(url))
            ordered = sorted(latencies)
            p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
            print(
                f"{args.answer_mb:g} MB answer: end {status}; watcher received {received / 1e6:.1f} MB of events; "
                f"GET / during it: {len(latencies)} requests, median {statistics.median(latencies) * 1000:.0f} ms, "
                f"p99 {p99 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms; server peak RSS "
                f"{peak_rss_mb(server.pid):.0f} MB"
            )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
