"""The code interpreter's bubblewrap sandbox: escape attempts are contained."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvloop
from PIL import Image

from arena.config import GateSettings
from arena.contenders.gate.registry import ImageRegistry
from arena.contenders.gate.tools.code import (
    CodeSandbox,
    code_interpreter_tool,
    code_tools,
)
from arena.contenders.gate.tools.sandbox_packages import sandbox_packages
from tests.servers.processes import descendants

SANDBOX = CodeSandbox(timeout=4, memory_mb=512)
REASON = SANDBOX.unavailable()
pytestmark = pytest.mark.skipif(bool(REASON), reason=f"code sandbox unavailable: {REASON}")


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP server on 127.0.0.1 that records every connection it accepts."""
    accepted: list[object] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                accepted.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def sandbox_processes() -> int:
    """Processes on the host owned by the sandbox's host user."""
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid and uid == 65534:
                    count += 1
            except FileNotFoundError:
                continue
    return count


def owner(pid: int) -> int | None:
    """The host user a process runs as (None once it has ended)."""
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except FileNotFoundError:
        return None


class TestSandbox:
    async def test_runs_python_with_numpy(self) -> None:
        result = await SANDBOX.run("import numpy as np\nprint(round(float(np.hypot(3, 4)), 1))\nprint(6*7)")
        assert result.exit_code == 0 and result.stdout == "5.0\n42\n"

    async def test_packages_under_a_private_folder_are_still_offered(self, tmp_path: Path) -> None:
        # a venv inside a 0700 checkout: the sandbox user cannot walk there by path
        site = tmp_path / "private" / "site-packages"
        (site / "probe_package").mkdir(parents=True)
        (site / "probe_package" / "__init__.py").write_text("ANSWER = 42\n")
        (tmp_path / "private").chmod(0o700)
        box = CodeSandbox(timeout=4, memory_mb=512)
        box.site_packages = sandbox_packages(site, ("probe_package",))
        assert box.site_packages["probe_package"] != str(site / "probe_package")  # a readable copy
        result = await box.run("import probe_package\nprint(probe_package.ANSWER)")
        assert result.exit_code == 0 and result.stdout == "42\n", result.stderr

    async def test_no_network_even_to_loopback(self, listener: tuple[int, list[object]]) -> None:
        port, accepted = listener
        result = await SANDBOX.run(
            "import socket\n"
            f"for host in ('127.0.0.1', '1.1.1.1'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port} if host == '127.0.0.1' else 80), timeout=2)\n"
            "        print(host, 'connected')\n"
            "    except OSError as e:\n"
            "        print(host, 'blocked', e.errno)\n"
        )
        assert "connected" not in result.stdout
        assert result.stdout.count("blocked") == 2
        assert accepted == []

    async def test_host_files_are_not_visible(self) -> None:
        result = await SANDBOX.run(
            "import os\nprint(open('/etc/passwd').read())\n"
            "hidden = ('/root', '/home', '/work', '/var', '/run', '/sys/fs', '/etc/shadow', '/etc/resolv.conf')\n"
            "print([p for p in hidden if os.path.exists(p)])\n"
            "print(os.getuid())"
        )
        assert result.stdout.splitlines() == ["sandbox:x:1000:1000:sandbox:/tmp:/usr/sbin/nologin", "", "[]", "1000"]
        host_passwd = Path("/etc/passwd").read_text()
        assert "root:x:0:0" in host_passwd and "root:x:0:0" not in result.stdout

    async def test_environment_and_processes_of_the_host_are_hidden(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ARENA_SECRET_KEY", "host-secret-value")
        result = await SANDBOX.run(
            "import json, os\nprint(json.dumps(sorted(os.environ)))\n"
            "print(json.dumps([p for p in os.listdir('/proc') if p.isdigit()]))"
        )
        env, pids = (json.loads(line) for line in result.stdout.splitlines())
        assert "ARENA_SECRET_KEY" not in env and "host-secret-value" not in result.stdout
        assert len(pids) <= 3  # bwrap's init and python: the host's processes are not there

    async def test_bwraps_own_environment_is_not_readable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # bwrap's init is pid 1 of the sandbox; --clearenv only clears what python gets, so
        # /proc/1/environ showed the server's whole environment (API keys, secret key).
        monkeypatch.setenv("ARENA_SECRET_KEY", "host-secret-value")
        result = await SANDBOX.run(
            "import os\n"
            "for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):\n"
            "    try:\n"
            "        print(pid, open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1'))\n"
            "    except OSError as e:\n"
            "        print(pid, 'unreadable', e.errno)\n"
        )
        assert result.exit_code == 0, result.stderr
        assert "host-secret-value" not in result.stdout and "ARENA_SECRET_KEY" not in result.stdout

    async def test_system_is_read_only_and_tmp_is_private(self) -> None:
        marker = Path("/tmp") / f"gate-sandbox-marker-{os.getpid()}"
        result = await SANDBOX.run(
            "try:\n    open('/usr/bin/evil', 'w')\nexcept OSError as e:\n    print('usr', e.errno)\n"
            f"open('/tmp/{marker.name}', 'w').write('x')\nprint('tmp ok')"
        )
        assert result.stdout == "usr 30\ntmp ok\n"  # EROFS
        assert not marker.exists()  # the sandbox's /tmp is its own

    async def test_writable_space_is_bounded(self) -> None:
        # tmpfs pages are host memory outside RLIMIT_AS: bwrap's root and /dev are tmpfs
        # of the default size (half the RAM), so every writable place must be small.
        result = await SANDBOX.run(
            "import os\n"
            "for d in ('/', '/opt', '/dev', '/dev/shm', '/tmp'):\n"
            "    total = 0\n"
            "    try:\n"
            "        for i in range(40):\n"
            "            with open(f'{d.rstrip(\"/\")}/fill{i}', 'wb') as f:\n"
            "                for _ in range(8):\n"
            "                    f.write(b'x' * (1 << 20))\n"
            "                    total += 1\n"
            "    except OSError:\n"
            "        pass\n"
            "    print(d, total)\n"
        )
        assert result.exit_code == 0, result.stderr
        written = {d: int(n) for d, n in (line.split() for line in result.stdout.splitlines())}
        assert written["/"] == written["/opt"] == written["/dev"] == 0
        assert written["/dev/shm"] <= 16 and written["/tmp"] <= 64
        assert sum(written.values()) <= 80  # MB, instead of gigabytes

    async def test_fork_bomb_is_contained(self) -> None:
        started = time.monotonic()
        result = await SANDBOX.run(
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
        )
        assert time.monotonic() - started < SANDBOX.timeout + 3
        assert result.exit_code != 0
        deadline = time.monotonic() + 5  # the kernel tears the pid namespace down asynchronously
        while sandbox_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sandbox_processes() == 0  # nothing left behind

    async def test_four_gigabytes_cannot_be_allocated(self) -> None:
        result = await SANDBOX.run("x = bytearray(4 * 1024**3)\nprint('allocated')")
        assert "allocated" not in result.stdout and "MemoryError" in result.stderr

    async def test_endless_loop_hits_the_time_limit(self) -> None:
        started = time.monotonic()
        result = await SANDBOX.run("while True:\n    pass")
        assert time.monotonic() - started < SANDBOX.timeout + 3
        assert result.timed_out or (result.exit_code or 0) < 0 or (result.exit_code or 0) >= 128

    async def test_cancelled_run_leaves_no_process(self) -> None:
        task = asyncio.ensure_future(SANDBOX.run("import time\nprint('up', flush=True)\ntime.sleep(3600)"))
        await asyncio.sleep(1.0)
        assert sandbox_processes() > 0
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 5
        while sandbox_processes() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert sandbox_processes() == 0

    async def test_output_is_capped(self) -> None:
        result = await SANDBOX.run("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)")
        assert result.truncated and len(result.stdout) == SANDBOX.max_output_bytes
        assert result.status() == "stopped: too much output"


class TestCodeInterpreterTool:
    async def test_observation_reports_output_and_errors(self, street: Image.Image) -> None:
        tool = code_interpreter_tool(SANDBOX)
        ok = await tool.run({"code": "print(sum(range(10)))"}, ImageRegistry(street))
        assert ok.observation == "exit code 0\nstdout:\n45\n" and ok.summary == "exit code 0: 45"
        failed = await tool.run({"code": "1/0"}, ImageRegistry(street))
        assert failed.observation.startswith("exit code 1\nstderr:") and "ZeroDivisionError" in failed.observation

    def test_runs_on_uvloop_as_the_served_app_does(self, street: Image.Image) -> None:
        # `arena serve` runs on uvloop, whose subprocess_exec refuses user/group arguments:
        # the tool must work there, and as root the sandbox must still run as nobody on the host
        tool = code_interpreter_tool(SANDBOX)

        async def run_and_watch() -> tuple[str, set[int]]:
            task = asyncio.ensure_future(
                tool.run({"code": "import time\nprint(6 * 7, flush=True)\ntime.sleep(1.5)"}, ImageRegistry(street))
            )
            owners: set[int] = set()
            while not task.done():
                owners |= {uid for pid in descendants(os.getpid()) if (uid := owner(pid)) is not None}
                await asyncio.sleep(0.05)
            return (await task).observation, owners

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            assert isinstance(runner.get_loop(), uvloop.Loop)
            observation, owners = runner.run(run_and_watch())
        assert observation == "exit code 0\nstdout:\n42\n"
        assert owners == ({65534} if os.geteuid() == 0 else {os.geteuid()})

    def test_offered_only_when_switched_on(self) -> None:
        assert [t.name for t in code_tools(GateSettings())[0]] == ["code_interpreter"]
        assert code_tools(GateSettings(code=False)) == ([], {"code_interpreter": "turned off ([tools] code = false)"})


class TestWithoutBubblewrap:
    def test_disabled_with_a_reason(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(shutil, "which", lambda name: None)
        tools, disabled = code_tools(GateSettings())
        assert tools == [] and "bubblewrap (bwrap) is not installed" in disabled["code_interpreter"]


class TestWithoutSeccomp:
    def test_disabled_with_a_reason(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # the filter shuts the memory doors (SysV IPC, memfd, sockets): no filter, no tool
        monkeypatch.setattr("arena.contenders.gate.tools.code.seccomp_filter", lambda: b"")
        tools, disabled = code_tools(GateSettings())
        assert tools == [] and "libseccomp is not installed" in disabled["code_interpreter"]
