"""`code_interpreter`: Python run in a bubblewrap (`bwrap`) sandbox.

The sandbox has no network (all namespaces unshared), sees the system's
`/usr` read-only, a private `/tmp`, and a fake minimal `/etc` (no host users,
no resolver); nothing of the host's home or project is mounted. It may not
make user namespaces of its own (`--disable-userns`), and a seccomp filter
(seccomp.py) refuses the system calls a sandboxed calculator never needs
(ptrace, mount, bpf, keyctl, io_uring, ...) and those that hold memory the
limits below do not see (SysV shared memory and IPC, memfd, POSIX message
queues, sockets, larger pipe buffers). Without libseccomp the tool is not
offered.

Memory is bounded for the sandbox as a whole, not per process: no cgroup is
used (cgroup v2 is rarely delegated to a container, and this host offers only
v1), so the bound is made of limits that add up to a total. The sandbox may
hold `max_processes` tasks (threads count) in its namespace plus bwrap's
monitor, each with an address space (RLIMIT_AS) of an equal share of
`memory_mb` once the two tmpfs mounts (/tmp, /dev/shm) and the pipe buffers
its descriptors can hold are set aside:
`(max_processes + 1) * (share + MAX_FILES * PIPE_BUFFER) + tmpfs <= memory_mb`.
Other limits: CPU seconds,
file size, open files, a wall-clock timeout, a cap on output, and at most
`max_concurrent` sandboxes at once per server process. When the service runs
as root, the sandbox starts as `nobody`, because the kernel does not apply
RLIMIT_NPROC to root. /etc's files and the seccomp filter reach bwrap through
pipes, not temporary files; numpy is copied to a temporary folder only when
the sandbox user cannot reach it, and that copy is removed at exit. Without a working `bwrap` the tool is not offered, and
`disabled` says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.config import GateSettings
from arena.contenders.base import ToolSpec
from arena.contenders.gate.registry import ImageRegistry
from arena.contenders.gate.tools.base import Tool, ToolResult
from arena.contenders.gate.tools.sandbox_packages import numpy_packages
from arena.contenders.gate.tools.seccomp import seccomp_filter

NOBODY = 65534
SANDBOX_SITE = "/opt/site-packages"
MAX_CODE_CHARS = 20_000
MAX_SHOWN_OUTPUT = 4000  # characters of stdout/stderr the model reads
MAX_FILES = 64  # descriptors each process of the sandbox may hold (RLIMIT_NOFILE)
# What one descriptor can keep in the kernel: a pipe's default buffer (16 pages), since the
# filter refuses F_SETPIPE_SZ, sockets, memfd and SysV IPC.
PIPE_BUFFER = 64 * 1024
# bwrap's own environment: its init is pid 1 inside the sandbox and /proc/1/environ
# is readable there (--clearenv only clears what the sandboxed program gets), so
# bwrap must never start with the server's environment (API keys, secret key).
BWRAP_ENV: dict[str, str] = {}
FAKE_ETC = {
    "passwd": "sandbox:x:1000:1000:sandbox:/tmp:/usr/sbin/nologin\n",
    "group": "sandbox:x:1000:\n",
    "hosts": "127.0.0.1 localhost\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
}
# Runs first in the sandbox's python: the kernel counts RLIMIT_NPROC per user namespace, so
# lowering it here bounds the tasks inside this sandbox alone (the limit bwrap starts with must
# also leave room for the host user's other tasks). A hard limit can only go down.
PRELUDE = (
    "import resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_NPROC, ({nproc}, {nproc}))\n"
    "source = sys.stdin.buffer.read()\n"
    "del resource\n"
    "exec(compile(source, '<code>', 'exec'), {{'__name__': '__main__', '__builtins__': __builtins__}})\n"
)


def code_tools(settings: GateSettings) -> tuple[list[Tool], dict[str, str]]:
    if not settings.code:
        return [], {"code_interpreter": "turned off ([tools] code = false)"}
    sandbox = CodeSandbox(
        timeout=settings.code_timeout,
        memory_mb=settings.code_memory_mb,
        max_processes=settings.code_processes,
    )
    reason = sandbox.unavailable()
    if reason:
        return [], {"code_interpreter": reason}
    return [code_interpreter_tool(sandbox)], {}


def code_interpreter_tool(sandbox: CodeSandbox) -> Tool:
    extras = " numpy is available." if sandbox.has_numpy() else ""
    spec = ToolSpec(
        "code_interpreter",
        f"Run Python 3 code in an isolated sandbox (no network, no files kept, {sandbox.timeout:g} s, "
        f"{sandbox.memory_mb} MB in all, {sandbox.max_processes} process"
        f"{'es' if sandbox.max_processes > 1 else ''}) and get what it prints; use it for arithmetic, distances between "
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
        max_processes: int = 2,
        max_concurrent: int = 2,
        max_output_bytes: int = 64 * 1024,
        python: str | None = None,
        bwrap: str | None = None,
    ) -> None:
        if not 1 <= max_processes <= 4:
            raise ValueError("the code sandbox allows 1 to 4 processes")
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.max_concurrent = max_concurrent
        self.max_output_bytes = max_output_bytes
        # writable tmpfs: host memory that RLIMIT_AS does not see, so taken from the total first
        self.tmp_mb = min(64, memory_mb // 8)
        self.shm_mb = min(16, memory_mb // 32)
        # and what the descriptors of every process can hold in pipe buffers
        self.buffers_mb = -(-(max_processes + 1) * MAX_FILES * PIPE_BUFFER // (1024 * 1024))
        self.process_memory_mb = (memory_mb - self.tmp_mb - self.shm_mb - self.buffers_mb) // (max_processes + 1)
        if self.process_memory_mb < 96:
            raise ValueError(
                f"{memory_mb} MB for {max_processes} processes leaves {self.process_memory_mb} MB each; "
                "Python needs about 100 MB: give the sandbox more memory or fewer processes"
            )
        self.bwrap = bwrap or shutil.which("bwrap") or ""
        self.python = python or _system_python()
        self.site_packages = numpy_packages()
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def unavailable(self) -> str:
        """Why the sandbox cannot run here ("" when it can)."""
        if not self.bwrap:
            return (
                "bubblewrap (bwrap) is not installed; install it (e.g. apt-get install bubblewrap) "
                "to enable code_interpreter"
            )
        if not self.python:
            return "no Python interpreter under /usr for the sandbox"
        if not seccomp_filter():
            return (
                "libseccomp is not installed (e.g. apt-get install libseccomp2): without its filter "
                "the sandbox could hold memory outside its bound, so code_interpreter is off"
            )
        return _probe(self.bwrap, self.python, self._run_as_nobody())

    def has_numpy(self) -> bool:
        return bool(self.site_packages) and not _probe(
            self.bwrap, self.python, self._run_as_nobody(), tuple(self.site_packages.items()), "import numpy"
        )

    async def run(self, code: str) -> SandboxResult:
        loop = asyncio.get_running_loop()
        slots = self._slots.setdefault(loop, asyncio.Semaphore(self.max_concurrent))
        async with slots:  # many sandboxes at once would multiply the memory bound
            return await self._run(code)

    async def _run(self, code: str) -> SandboxResult:
        with self.launch() as (command, fds):
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=BWRAP_ENV,
                preexec_fn=self._preexec(),
                pass_fds=fds,
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

    @contextlib.contextmanager
    def launch(self) -> Iterator[tuple[list[str], tuple[int, ...]]]:
        """The bwrap command line and the descriptors it reads (closed here after the start)."""
        fds: list[int] = []
        try:
            yield self._command(fds), tuple(fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _command(self, fds: list[int]) -> list[str]:
        def data(content: bytes) -> str:
            fds.append(_pipe_with(content))
            return str(fds[-1])

        args = [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",  # no nested user namespaces: the kernel's largest attack surface
            "--die-with-parent",
            "--new-session",
            # python is pid 1 of the sandbox: with bwrap's own init there, bwrap's monitor
            # exits before reaping it and every call left a zombie when the server is pid 1
            "--as-pid-1",
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
        for name, text in FAKE_ETC.items():
            args += ["--perms", "0644", "--ro-bind-data", data(text.encode()), f"/etc/{name}"]
        filter_bpf = seccomp_filter()
        if filter_bpf:
            args += ["--seccomp", data(filter_bpf)]
        args += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(self.tmp_mb * 1024 * 1024),
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
        for name, folder in self.site_packages.items():
            args += ["--ro-bind", folder, f"{SANDBOX_SITE}/{name}"]
        if self.site_packages:
            args += ["--setenv", "PYTHONPATH", SANDBOX_SITE]
        # bwrap's root and /dev are tmpfs of the default size (half the host's RAM), and tmpfs
        # pages are not counted by RLIMIT_AS: a small /dev/shm, then both read-only, so /tmp
        # and /dev/shm are the only (bounded) places to write. After every other mount.
        args += [
            "--size",
            str(self.shm_mb * 1024 * 1024),
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
        ]
        return [*args, "--", self.python, "-S", "-u", "-c", PRELUDE.format(nproc=self.max_processes)]

    def _child_setup(self, nproc: int, as_nobody: bool) -> None:
        # Runs in the child between fork and exec: every process of the sandbox inherits these.
        # The identity is dropped here, not by create_subprocess_exec's user/group arguments,
        # because uvloop (the loop of `arena serve`) refuses those; every loop runs preexec_fn.
        mem = self.process_memory_mb * 1024 * 1024
        cpu = max(1, int(self.timeout))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024, 16 * 1024 * 1024))
        resource.setrlimit(resource.RLIMIT_NOFILE, (MAX_FILES, MAX_FILES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))  # as well as the filter's refusal
        if as_nobody:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)

    def _preexec(self) -> Callable[[], None]:
        # RLIMIT_NPROC counts every task of the host user, the service's own threads
        # included when it is not root: allow that many plus the sandbox's share (and bwrap's
        # monitor); the prelude then bounds the sandbox's own namespace to `max_processes`.
        as_nobody = self._run_as_nobody()
        uid = NOBODY if as_nobody else os.getuid()
        nproc = _tasks_of(uid) + self.max_processes + 1
        return functools.partial(self._child_setup, nproc, as_nobody)

    def _run_as_nobody(self) -> bool:
        return os.geteuid() == 0


@functools.lru_cache(maxsize=16)
def _probe(
    bwrap: str, python: str, as_nobody: bool, site: tuple[tuple[str, str], ...] = (), code: str = "print('ok')"
) -> str:
    """ "" if a trivial program runs in the sandbox, else the reason it does not."""
    box = CodeSandbox(python=python, bwrap=bwrap, timeout=20)
    box.site_packages = dict(site)
    try:
        with box.launch() as (command, fds):
            result = subprocess.run(
                command,
                check=False,
                input=code.encode(),
                capture_output=True,
                timeout=20,
                env=BWRAP_ENV,
                preexec_fn=box._preexec(),
                pass_fds=fds,
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


def _system_python() -> str:
    # An interpreter under /usr is visible inside the sandbox (only /usr is mounted).
    candidates = ["/usr/bin/python3", "/usr/local/bin/python3", os.path.realpath(sys.executable)]
    for path in candidates:
        if path.startswith("/usr/") and os.access(path, os.X_OK):
            return path
    return ""


def _pipe_with(content: bytes) -> int:
    """The read end of a pipe already holding `content` (a few KB: fits the pipe's buffer)."""
    read, write = os.pipe()
    try:
        os.write(write, content)
    finally:
        os.close(write)
    return read


async def _read_capped(stream: asyncio.StreamReader, cap: int, too_much: asyncio.Event) -> bytes:
    data = bytearray()
    while chunk := await stream.read(65536):
        if len(data) < cap:
            data += chunk[: cap - len(data)]
        if len(data) >= cap and not too_much.is_set():
            too_much.set()
    return bytes(data)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # bwrap and its pid namespace go with it


def _tail(text: str) -> str:
    if len(text) <= MAX_SHOWN_OUTPUT:
        return text
    return text[: MAX_SHOWN_OUTPUT // 2] + "\n[... output cut ...]\n" + text[-MAX_SHOWN_OUTPUT // 2 :]
