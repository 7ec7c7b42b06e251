"""`code_interpreter`: Python run in a bubblewrap (`bwrap`) sandbox.

The sandbox has no network (all namespaces unshared), sees the system's
`/usr` read-only, a private `/tmp`, and a fake minimal `/etc` (no host users,
no resolver); nothing of the host's home or project is mounted. Limits:
address space (RLIMIT_AS), CPU seconds (RLIMIT_CPU), processes (RLIMIT_NPROC),
file size, open files, a wall-clock timeout and a cap on output. When the
service runs as root, the sandbox starts as `nobody`, because the kernel
does not apply RLIMIT_NPROC to root. Without a working `bwrap` the tool is
not offered, and `disabled` says why.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.gate.registry import ImageRegistry
from arena.gate.settings import GateSettings
from arena.gate.tools.base import Tool, ToolResult
from arena.providers.base import ToolSpec

NOBODY = 65534
SANDBOX_SITE = "/opt/site-packages"
MAX_CODE_CHARS = 20_000
MAX_SHOWN_OUTPUT = 4000  # characters of stdout/stderr the model reads
# bwrap's own environment: its init is pid 1 inside the sandbox and /proc/1/environ
# is readable there (--clearenv only clears what the sandboxed program gets), so
# bwrap must never start with the server's environment (API keys, secret key).
BWRAP_ENV: dict[str, str] = {}


def code_tools(settings: GateSettings) -> tuple[list[Tool], dict[str, str]]:
    if not settings.code:
        return [], {"code_interpreter": "turned off ([tools] code = false)"}
    sandbox = CodeSandbox(timeout=settings.code_timeout, memory_mb=settings.code_memory_mb)
    reason = sandbox.unavailable()
    if reason:
        return [], {"code_interpreter": reason}
    return [code_interpreter_tool(sandbox)], {}


def code_interpreter_tool(sandbox: CodeSandbox) -> Tool:
    extras = " numpy is available." if sandbox.has_numpy() else ""
    spec = ToolSpec(
        "code_interpreter",
        f"Run Python 3 code in an isolated sandbox (no network, no files kept, {sandbox.timeout:g} s, "
        f"{sandbox.memory_mb} MB) and get what it prints; use it for arithmetic, distances between "
        f"coordinates, sun-angle or time-zone calculations.{extras}",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["code"],
            "properties": {
                "code": {
                    "type": "string",
                    "maxLength": MAX_CODE_CHARS,
                    "description": "a complete Python program; print the results",
                }
            },
        },
    )

    async def run(args: dict[str, Any], registry: ImageRegistry) -> ToolResult:
        result = await sandbox.run(args["code"])
        return ToolResult(result.observation(), summary=result.summary())

    return Tool(spec, run, sandbox.timeout + 5)


@dataclass(frozen=True)
class SandboxResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False

    def status(self) -> str:
        if self.timed_out:
            return "stopped: wall-clock time limit reached"
        if self.truncated:
            return "stopped: too much output"
        if self.exit_code is not None and self.exit_code < 0:
            name = (
                signal.Signals(-self.exit_code).name
                if -self.exit_code in signal.Signals._value2member_map_
                else str(-self.exit_code)
            )
            return f"killed by {name} (a resource limit was reached)"
        if self.exit_code is not None and self.exit_code >= 128:
            return f"killed by signal {self.exit_code - 128} (a resource limit was reached)"
        return f"exit code {self.exit_code}"

    def observation(self) -> str:
        parts = [self.status()]
        if self.stdout:
            parts.append("stdout:\n" + _tail(self.stdout))
        if self.stderr:
            parts.append("stderr:\n" + _tail(self.stderr))
        return "\n".join(parts)

    def summary(self) -> str:
        shown = (self.stdout or self.stderr).strip()
        return f"{self.status()}: {shown[:300]}" if shown else self.status()


class CodeSandbox:
    """Runs untrusted Python with bubblewrap and resource limits."""

    def __init__(
        self,
        *,
        timeout: float = 15.0,
        memory_mb: int = 768,
        max_processes: int = 32,
        max_output_bytes: int = 64 * 1024,
        python: str | None = None,
        bwrap: str | None = None,
    ) -> None:
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.max_output_bytes = max_output_bytes
        self.bwrap = bwrap or shutil.which("bwrap") or ""
        self.python = python or _system_python()
        self.site_packages = _numpy_site_packages()

    def unavailable(self) -> str:
        """Why the sandbox cannot run here ("" when it can)."""
        if not self.bwrap:
            return (
                "bubblewrap (bwrap) is not installed; install it (e.g. apt-get install bubblewrap) "
                "to enable code_interpreter"
            )
        if not self.python:
            return "no Python interpreter under /usr for the sandbox"
        return _probe(self.bwrap, self.python, self._run_as_nobody())

    def has_numpy(self) -> bool:
        return bool(self.site_packages) and not _probe(
            self.bwrap, self.python, self._run_as_nobody(), self.site_packages, "import numpy"
        )

    async def run(self, code: str) -> SandboxResult:
        command = self.command()
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=BWRAP_ENV,
            preexec_fn=self._preexec(),
            **_identity(self._run_as_nobody()),
        )
        assert process.stdin and process.stdout and process.stderr
        process.stdin.write(code.encode("utf-8", errors="replace"))
        process.stdin.close()
        too_much = asyncio.Event()
        readers: asyncio.Future[Any] = asyncio.gather(
            _read_capped(process.stdout, self.max_output_bytes, too_much),
            _read_capped(process.stderr, self.max_output_bytes, too_much),
        )
        flooded: asyncio.Future[Any] = asyncio.ensure_future(too_much.wait())
        timed_out = False
        try:
            try:
                async with asyncio.timeout(self.timeout):
                    # ends at EOF on both pipes, or as soon as the output cap is reached
                    await asyncio.wait({readers, flooded}, return_when=asyncio.FIRST_COMPLETED)
            except TimeoutError:
                timed_out = True
            finally:
                flooded.cancel()
                if process.returncode is None and (timed_out or too_much.is_set()):
                    _kill(process.pid)
            out, err = await readers
            exit_code = await process.wait()
        except BaseException:
            # cancelled (the agent's tool timeout, an abandoned battle): leave nothing running
            readers.cancel()
            if process.returncode is None:
                _kill(process.pid)
            raise
        return SandboxResult(
            exit_code,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            timed_out=timed_out,
            truncated=too_much.is_set(),
        )

    def command(self) -> list[str]:
        etc = self._fake_etc()
        args = [
            self.bwrap,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), f"/{name}"]
            elif host.is_dir():
                args += ["--ro-bind", str(host), f"/{name}"]
        args += [
            "--ro-bind",
            str(etc),
            "/etc",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(64 * 1024 * 1024),
            "--tmpfs",
            "/tmp",
            "--chdir",
            "/tmp",
            "--uid",
            "1000",
            "--gid",
            "1000",
            "--hostname",
            "sandbox",
            "--clearenv",
            "--setenv",
            "HOME",
            "/tmp",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--setenv",
            "OPENBLAS_NUM_THREADS",
            "1",
            "--setenv",
            "OMP_NUM_THREADS",
            "1",
            "--setenv",
            "PYTHONDONTWRITEBYTECODE",
            "1",
        ]
        if self.site_packages:
            args += ["--ro-bind", self.site_packages, SANDBOX_SITE, "--setenv", "PYTHONPATH", SANDBOX_SITE]
        # bwrap's root and /dev are tmpfs of the default size (half the host's RAM), and tmpfs
        # pages are not counted by RLIMIT_AS: a small /dev/shm, then both read-only, so /tmp
        # and /dev/shm are the only (bounded) places to write. After every other mount.
        args += ["--size", str(16 * 1024 * 1024), "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--remount-ro", "/"]
        return [*args, "--", self.python, "-S", "-u", "-"]

    def _limits(self, nproc: int) -> None:
        # Runs in the child between fork and exec: every process of the sandbox inherits these.
        mem = self.memory_mb * 1024 * 1024
        cpu = max(1, int(self.timeout))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024, 16 * 1024 * 1024))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def _preexec(self) -> Callable[[], None]:
        # RLIMIT_NPROC counts every task of the host user, the service's own threads
        # included when it is not root: allow that many plus the sandbox's share.
        uid = NOBODY if self._run_as_nobody() else os.getuid()
        nproc = _tasks_of(uid) + self.max_processes
        return functools.partial(self._limits, nproc)

    def _run_as_nobody(self) -> bool:
        return os.geteuid() == 0

    def _fake_etc(self) -> Path:
        etc = _make_fake_etc()
        if not (etc / "passwd").exists():  # someone cleaned /tmp: make it again
            _make_fake_etc.cache_clear()
            etc = _make_fake_etc()
        return etc


@functools.cache
def _make_fake_etc() -> Path:
    """A minimal /etc: one sandbox user, localhost, nothing from the host
    (one per process, shared by every sandbox)."""
    root = Path(tempfile.mkdtemp(prefix="gate-etc-"))
    files = {
        "passwd": "sandbox:x:1000:1000:sandbox:/tmp:/usr/sbin/nologin\n",
        "group": "sandbox:x:1000:\n",
        "hosts": "127.0.0.1 localhost\n",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
        (root / name).chmod(0o644)
    root.chmod(0o755)  # the sandbox may run as nobody
    return root


@functools.lru_cache(maxsize=16)
def _probe(bwrap: str, python: str, as_nobody: bool, site: str = "", code: str = "print('ok')") -> str:
    """ "" if a trivial program runs in the sandbox, else the reason it does not."""
    box = CodeSandbox(python=python, bwrap=bwrap, timeout=20)
    box.site_packages = site
    try:
        result = subprocess.run(
            box.command(),
            input=code.encode(),
            capture_output=True,
            timeout=20,
            env=BWRAP_ENV,
            preexec_fn=box._preexec(),
            **_identity(as_nobody),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start: {exc}"
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        return f"bubblewrap does not work here (exit {result.returncode}: {detail[0][:200]})"
    return ""


def _tasks_of(uid: int) -> int:
    """Threads and processes the host user `uid` has now."""
    count = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue  # the process ended while we looked
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def _identity(as_nobody: bool) -> dict[str, Any]:
    return {"user": NOBODY, "group": NOBODY, "extra_groups": []} if as_nobody else {}


def _system_python() -> str:
    # An interpreter under /usr is visible inside the sandbox (only /usr is mounted).
    candidates = ["/usr/bin/python3", "/usr/local/bin/python3", os.path.realpath(sys.executable)]
    for path in candidates:
        if path.startswith("/usr/") and os.access(path, os.X_OK):
            return path
    return ""


def _numpy_site_packages() -> str:
    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.origin:
        return ""
    # numpy.libs holds the OpenBLAS its wheel bundles
    return sandbox_site(Path(spec.origin).resolve().parent.parent, ("numpy", "numpy.libs"))


@functools.cache
def sandbox_site(site: Path, packages: tuple[str, ...]) -> str:
    """A folder the sandbox user can read that holds `packages` from `site`:
    `site` itself when every folder above it lets others through, else (a venv
    inside a private checkout) a copy of just those packages, made once per
    process. The sandbox's interpreter must be the same minor version."""
    if all(os.stat(p).st_mode & 0o005 == 0o005 for p in (site, *site.parents) if str(p) != "/"):
        return str(site)
    stage = Path(tempfile.mkdtemp(prefix="gate-site-"))
    for name in packages:
        if (site / name).is_dir():
            shutil.copytree(site / name, stage / name)
    stage.chmod(0o755)  # the sandbox may run as nobody
    return str(stage)


async def _read_capped(stream: asyncio.StreamReader, cap: int, too_much: asyncio.Event) -> bytes:
    data = bytearray()
    while chunk := await stream.read(65536):
        if len(data) < cap:
            data += chunk[: cap - len(data)]
        if len(data) >= cap and not too_much.is_set():
            too_much.set()
    return bytes(data)


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # bwrap and its pid namespace go with it
    except ProcessLookupError:
        pass


def _tail(text: str) -> str:
    if len(text) <= MAX_SHOWN_OUTPUT:
        return text
    return text[: MAX_SHOWN_OUTPUT // 2] + "\n[... output cut ...]\n" + text[-MAX_SHOWN_OUTPUT // 2 :]
