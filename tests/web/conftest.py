"""Fixtures for browser tests: the real arena served by `arena serve` in a
subprocess, and Debian's headless Chromium driven by Playwright.

Chromium is never downloaded and never optional: CI must run the browser
tests, so a missing browser fails them with the command that installs it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.servers import serve_in_thread
from tests.servers.openai_compatible import OpenAICompatibleServer

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("GEOARENA_SHARED", ROOT.parent / "shared"))
SAMPLE_IMAGES = SHARED / "data" / "geobrowse-sample" / "images"
SERVER_START_TIMEOUT = 90.0  # seconds: `arena serve` migrates the database and builds the pool first
# A pool of the offline baseline, plain and GATE-equipped, with no challenge before a battle
BASELINE_POOL = """
[[contenders]]
name = "ocr-geolocator"
provider = "baseline"
model = "ocr-geolocator"

[[contenders]]
name = "ocr-geolocator+gate"
provider = "baseline"
model = "ocr-geolocator"
gate = true

[integrity]
challenge = "off"
"""


@dataclass(frozen=True)
class ArenaServer:
    url: str
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None, compare=False)

    @property
    def database(self) -> Path:
        return self.data_dir / "arena.db"

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="session")
def arena_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArenaServer]:
    """`arena serve` with SQLite in a temporary data dir and the offline pool
    (the pool file it is given does not exist)."""
    base = tmp_path_factory.mktemp("arena-server")
    with serve_arena(base, base / "no-pool.toml") as server:
        yield server


@contextmanager
def serve_arena(
    base: Path,
    config: Path,
    database_url: str | None = None,
    env_extra: dict[str, str] | None = None,
    *,
    user: int | None = None,
) -> Iterator[ArenaServer]:
    """`arena serve` on a free loopback port until the block ends; SQLite
    under `base` (or `database_url`), the pool from `config`. No ARENA_*
    variable leaks in; the secret is shared by every server under one `base`.
    `user`: run by root, the server runs as that user id instead (`as_user`)."""
    port = free_port()
    arena = Path(sys.executable).with_name("arena")
    if not arena.exists():
        pytest.fail(f"the `arena` console script is missing next to {sys.executable}; run `make test`")
    command = [str(arena), "serve", "--host", "127.0.0.1", "--port", str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env |= {
        "ARENA_DATA_DIR": str(base / "data"),
        "ARENA_CONFIG": str(config),
        "ARENA_ENV": "test",
        "ARENA_SECRET_KEY": _shared_secret(base),
    }
    if database_url:
        env["ARENA_DATABASE_URL"] = database_url
    env |= env_extra or {}
    checkout = ROOT
    if user is not None and os.geteuid() == 0:
        command, env, checkout = as_user(user, command[1:], env, base)
    log_path = base / f"server-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=checkout,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = ArenaServer(f"http://127.0.0.1:{port}", base / "data", log_path, process)
    try:
        _wait_until_serving(server, process)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def as_user(user: int, arguments: list[str], env: dict[str, str], base: Path) -> tuple[list[str], dict[str, str], Path]:
    """The command that runs `arena ARGUMENTS` as `user` (and its group, no others), from root,
    with its environment and working folder.

    The checkout may sit in a folder only root can enter (CI's clone, `mktemp -d`'s), so its
    tracked files are copied under `base`, which the user can reach. The
    venv's interpreter may sit where only root can reach it too (pyenv's, under /root), so a
    system interpreter of the same version runs the copy, with the venv's packages on its
    path: the same code, the same compiled modules. The venv itself may be in that closed
    folder, so the user keeps one capability, reading and searching any folder
    (CAP_DAC_READ_SEARCH); writing, it is the user alone."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    interpreter = next((p for p in (Path("/usr/bin") / version, Path("/usr/local/bin") / version) if p.exists()), None)
    if interpreter is None:
        pytest.fail(f"no {version} outside the venv for a normal user to run: apt-get install {version}")
    checkout = base / "checkout"
    if not checkout.exists():
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
        for name in tracked.stdout.splitlines():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, checkout / name)
    packages = [p for p in sys.path if p.endswith("site-packages")]
    command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"]
    command += ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", str(interpreter)]
    command += ["-c", "import sys; from arena.cli import main; sys.exit(main())", *arguments]
    path = os.pathsep.join([str(checkout), *packages])
    return command, env | {"PYTHONPATH": path, "HOME": env["ARENA_DATA_DIR"]}, checkout


@pytest.fixture(scope="module")
def paced_arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArenaServer]:
    """The arena with two loopback contenders, `north` and `south`, whose `paced-*` models take
    about two seconds (so "mid-stream" and "before voting opens" are real); no challenge."""
    base = tmp_path_factory.mktemp("arena-battle-page")
    models = OpenAICompatibleServer()
    with serve_in_thread(models.app) as models_url:
        pool = base / "arena.toml"
        pool.write_text(
            "".join(
                f'[[contenders]]\nname = "{name}"\nprovider = "openai"\nbase_url = "{models_url}/v1"\n'
                f'model = "paced-{name}"\ntimeout = 30\n\n'
                for name in ("north", "south")
            )
            + '[integrity]\nchallenge = "off"\n'
        )
        with serve_arena(base, pool) as server:
            yield server


@pytest.fixture(scope="session")
def sample_photo() -> Path:
    """A real photo from the GeoBrowse sample in the shared data dir."""
    photo = SAMPLE_IMAGES / "level1-1.jpg"
    if not photo.exists():
        pytest.fail(f"sample photo missing: {photo} (set GEOARENA_SHARED to the shared dir)")
    return photo


def _shared_secret(base: Path) -> str:
    """Replicas of one arena share its secret (voter hashes, challenges)."""
    path = base / "secret"
    if not path.exists():
        path.write_text(secrets.token_hex(16))
    return path.read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_serving(server: ArenaServer, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"`arena serve` exited with {process.returncode}:\n{server.log_tail()}")
        try:
            if httpx.get(server.url + "/", timeout=2, trust_env=False).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    pytest.fail(f"`arena serve` did not answer within {SERVER_START_TIMEOUT:.0f} s:\n{server.log_tail()}")
