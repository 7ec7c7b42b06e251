"""The code sandbox bounded as a whole: memory and tmpfs of all its processes together,
its process count, its system calls, no nested user namespaces, nothing left in the host's
temporary directory, and no zombie when the server is pid 1."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from arena.config import GateSettings
from arena.contenders.gate.tools.code import CodeSandbox, code_tools
from tests.servers.processes import children_of, descendants, parent_of_each

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = CodeSandbox(timeout=8, memory_mb=768, max_processes=4)
REASON = SANDBOX.unavailable()
pytestmark = pytest.mark.skipif(bool(REASON), reason=f"code sandbox unavailable: {REASON}")

# Every process it may start takes all the memory it can get, then /tmp and /dev/shm are filled.
HOG = textwrap.dedent("""
    import os, time
    children = 0
    for _ in range(8):
        try:
            if os.fork() == 0:
                break
            children += 1
        except OSError:
            break
    chunks = []
    try:
        while True:
            chunk = bytearray(4 * 1024 * 1024)
            chunk[::4096] = b"x" * len(chunk[::4096])
            chunks.append(chunk)
    except MemoryError:
        pass
    for folder in ("/tmp", "/dev/shm"):
        try:
            with open(f"{folder}/fill-{os.getpid()}", "wb") as f:
                while True:
                    f.write(b"y" * (1 << 20))
                    f.flush()
        except OSError:
            pass
    print(os.getpid(), len(chunks) * 4, "MB", children, flush=True)
    time.sleep(2.5)
""")


def sandbox_processes() -> list[int]:
    """The bwrap processes this test process started, and everything below them (one read of
    /proc). Only these: in a full run the test process also has other children (servers and
    browsers that session fixtures started), and counting them read 850 MB for a 768 MB sandbox."""
    parents, me = parent_of_each(), os.getpid()
    found: list[int] = []
    for child in children_of(me, parents):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "bwrap":
                found += [child, *descendants(child, parents)]
        except OSError:
            continue
    return found


def footprint(pids: list[int]) -> tuple[int, int]:
    """(resident bytes of these processes, bytes used in their /tmp and /dev/shm)."""
    rss, tmpfs = 0, {}
    host_mounts = os.readlink("/proc/self/ns/mnt")
    for pid in pids:
        try:
            # Pss, not VmRSS: a forked child shares its parent's pages, and summing RSS counts
            # those once per process (under load the sum read 1.2 GB for a 768 MB sandbox)
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    rss += int(line.split()[1]) * 1024
            if os.readlink(f"/proc/{pid}/ns/mnt") == host_mounts:
                continue  # bwrap's monitor: its /tmp is the host's
            for folder in _tmpfs_mounts(pid, ("/tmp", "/dev/shm")):
                vfs = os.statvfs(f"/proc/{pid}/root/{folder}")
                # keyed by the mount's size and folder: the same tmpfs seen through every process
                tmpfs[(folder, vfs.f_blocks)] = (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize
        except (OSError, ValueError):
            continue
    return rss, sum(tmpfs.values())


def _tmpfs_mounts(pid: int, folders: tuple[str, ...]) -> list[str]:
    """Which of `folders` are tmpfs mounts in the process's own view. While bwrap builds the
    sandbox its child has a mount namespace of its own but still the host's root, whose /tmp
    is the host's disk: reading that as the sandbox's tmpfs counted the disk's usage."""
    found = []
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields, _, after = line.partition(" - ")
        mount_point, fs_type = fields.split()[4], after.split()[0]
        if mount_point in folders and fs_type == "tmpfs":
            found.append(mount_point.lstrip("/"))
    return found


class TestMemoryAsAWhole:
    async def test_all_processes_together_stay_under_the_ceiling(self) -> None:
        peak = {"total": 0, "processes": 0}
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                pids = sandbox_processes()
                rss, tmpfs = footprint(pids)
                peak["total"] = max(peak["total"], rss + tmpfs)
                peak["processes"] = max(peak["processes"], len(pids))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            result = await SANDBOX.run(HOG)
        finally:
            stop.set()
            watcher.join()
        assert result.exit_code == 0, result.stderr
        lines = result.stdout.splitlines()
        assert len(lines) == SANDBOX.max_processes  # python and the 3 children it may have
        ceiling = SANDBOX.memory_mb * 1024 * 1024
        print(f"sandbox peak {peak['total'] / 2**20:.0f} MB of {SANDBOX.memory_mb} MB, {peak['processes']} processes")
        assert peak["total"] <= ceiling
        assert peak["total"] >= ceiling // 2  # the hog really reached for it
        assert peak["processes"] <= SANDBOX.max_processes + 1  # and bwrap's monitor

    async def test_threads_count_as_processes(self) -> None:
        result = await SANDBOX.run(
            "import threading, time\nstarted = 0\n"
            "for _ in range(20):\n"
            "    try:\n"
            "        threading.Thread(target=time.sleep, args=(1,), daemon=True).start()\n"
            "        started += 1\n"
            "    except RuntimeError:\n"
            "        break\n"
            "print(started)"
        )
        assert result.stdout.strip() == str(SANDBOX.max_processes - 1)

    def test_limits_that_cannot_make_a_working_sandbox_are_refused(self) -> None:
        with pytest.raises(ValueError, match="Python needs about 100 MB"):
            CodeSandbox(memory_mb=384, max_processes=4)
        with pytest.raises(ValueError, match="1 to 4 processes"):
            CodeSandbox(max_processes=32)

    def test_the_pool_settings_reach_the_sandbox(self) -> None:
        tools, _ = code_tools(GateSettings(code_memory_mb=1024, code_processes=3))
        assert "1024 MB in all, 3 processes" in tools[0].spec.description


# Memory the address-space limit does not see: each program forks as many processes as the
# sandbox allows, then every process holds all it can through one door and prints how many MB
# it holds. SysV segments stay resident after shmdt; memfd files are one per descriptor, each
# up to the file-size limit; socket pairs and pipes queue data in the kernel.
FORK_ALL = """
import os, time
for _ in range(8):
    try:
        if os.fork() == 0:
            break
    except OSError:
        break
held = 0
"""
DOORS = {
    "sysv_shm": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
for _ in range(40):  # attach, fill, detach: 64 MB a segment
    segment = libc.shmget(0, 64 << 20, 0o1000 | 0o600)
    if segment < 0:
        break
    address = libc.shmat(segment, None, 0)
    if address is None or address == ctypes.c_void_p(-1).value:
        break
    ctypes.memset(address, 1, 64 << 20)
    libc.shmdt(ctypes.c_void_p(address))
    held += 64
""",
    "memfd": """
import errno
files = []
try:
    while held < 2560:
        fd = os.memfd_create("fill")
        files.append(fd)
        try:
            while True:  # 1 MB at a time, up to the file-size limit
                os.write(fd, b"x" * (1 << 20))
                held += 1
        except OSError as e:
            if e.errno != errno.EFBIG:
                raise
except OSError:
    pass
""",
    "socket_buffers": """
import socket
pairs = []
try:
    while held < 2560:
        a, b = socket.socketpair()
        pairs.append((a, b))
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
        b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        a.setblocking(False)
        try:
            while True:
                held += a.send(b"x" * 65536) / 2**20
        except BlockingIOError:
            pass
except OSError:
    pass
""",
    "pipe_buffers": """
import fcntl
pipes = []
try:
    while held < 2560:
        read, write = os.pipe()
        try:
            fcntl.fcntl(write, 1031, 1 << 20)  # F_SETPIPE_SZ, to the largest allowed
        except OSError:
            pass
        os.set_blocking(write, False)
        try:
            while True:
                held += os.write(write, b"x" * 65536) / 2**20
        except BlockingIOError:
            pass
        os.close(write)
        pipes.append(read)
except OSError:
    pass
""",
}
REPORT = """
os.write(1, b"%d\\n" % round(held))  # one write: the processes' lines do not interleave
time.sleep(1.5)
"""


def host_shmem() -> int:
    """Bytes of shared memory on the host (tmpfs, SysV segments and memfd files all count)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no Shmem line in /proc/meminfo")


class TestMemoryOutsideTheAddressSpace:
    @pytest.mark.parametrize("door", sorted(DOORS))
    async def test_no_door_holds_more_than_the_bound(self, door: str) -> None:
        peak, stop = [0], threading.Event()
        shmem_before = host_shmem()

        def watch() -> None:
            while not stop.is_set():
                rss, tmpfs = footprint(sandbox_processes())
                # the sandbox's own tmpfs is also in Shmem: counted once, as growth of Shmem
                peak[0] = max(peak[0], rss + max(tmpfs, host_shmem() - shmem_before))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            result = await SANDBOX.run(FORK_ALL + textwrap.dedent(DOORS[door]) + REPORT)
        finally:
            stop.set()
            watcher.join()
        assert result.exit_code == 0, result.stderr
        held = [int(line) for line in result.stdout.split()]
        assert len(held) == SANDBOX.max_processes, result.stdout  # every process tried
        ceiling_mb = SANDBOX.memory_mb
        print(f"{door}: held {sum(held)} MB by their own count, measured peak {peak[0] >> 20} MB of {ceiling_mb}")
        assert sum(held) <= ceiling_mb
        assert peak[0] <= ceiling_mb * 1024 * 1024


class TestKernelSurface:
    async def test_seccomp_filter_refuses_dangerous_calls(self) -> None:
        result = await SANDBOX.run(
            textwrap.dedent("""
            import ctypes, errno
            libc = ctypes.CDLL(None, use_errno=True)
            print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])
            for name, call in (("ptrace", lambda: libc.ptrace(0, 0, 0, 0)),
                               ("io_uring_setup", lambda: libc.syscall(425, 1, 0)),
                               ("bpf", lambda: libc.syscall(321, 0, 0, 0)),
                               ("keyctl", lambda: libc.syscall(250, 0, 0, 0)),
                               ("mount", lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))):
                print(name, call(), errno.errorcode.get(ctypes.get_errno()))
        """)
        )
        lines = result.stdout.splitlines()
        assert lines[0] == "2", result.stderr  # SECCOMP_MODE_FILTER
        assert all(line.endswith("-1 EPERM") for line in lines[1:]) and len(lines) == 6, lines

    async def test_no_user_namespace_inside(self) -> None:
        result = await SANDBOX.run(
            textwrap.dedent("""
            import ctypes, errno, os
            libc = ctypes.CDLL(None, use_errno=True)
            pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER | SIGCHLD)
            if pid == 0:
                os._exit(0)
            print(pid, errno.errorcode.get(ctypes.get_errno()))
        """)
        )
        assert result.stdout.strip() in ("-1 ENOSPC", "-1 EPERM"), result.stdout + result.stderr


class TestHostFootprint:
    def test_nothing_is_left_in_the_temporary_directory(self, tmp_path: Path) -> None:
        # a fresh process whose numpy sits in a private (0700) folder: the old sandbox copied it
        # (72 MB) and wrote /etc's files into the temporary directory and never removed either
        private = tmp_path / "checkout"
        site = private / "site-packages"
        shutil.copytree(Path(np.__file__).parent, site / "numpy")
        libs = Path(np.__file__).parent.parent / "numpy.libs"
        if libs.is_dir():
            shutil.copytree(libs, site / "numpy.libs")
        private.chmod(0o700)
        # a temporary directory the sandbox user can pass through (pytest's tmp_path is private)
        temporary = Path(tempfile.mkdtemp(prefix="geoarena-test-tmp-"))
        temporary.chmod(0o1777)  # like /tmp
        script = textwrap.dedent(f"""
            import asyncio
            from pathlib import Path
            from arena.contenders.gate.tools.code import CodeSandbox
            from arena.contenders.gate.tools.sandbox_packages import sandbox_packages
            box = CodeSandbox(timeout=5)
            box.site_packages = sandbox_packages(Path({str(site)!r}), ("numpy", "numpy.libs"))
            assert box.site_packages["numpy"].startswith({str(temporary)!r})  # copied, there
            result = asyncio.run(box.run("import numpy; print(numpy.int64(6) * 7)"))
            print(result.stdout.strip() or result)
        """)
        env = {**os.environ, "TMPDIR": str(temporary)}
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        try:
            assert done.stdout.strip() == "42", done.stderr
            assert list(temporary.iterdir()) == []
        finally:
            shutil.rmtree(temporary, ignore_errors=True)


ZOMBIE_SCRIPT = textwrap.dedent("""
    import asyncio, os
    from pathlib import Path
    from arena.contenders.gate.tools.code import CodeSandbox

    async def main():
        box = CodeSandbox(timeout=5)
        assert not box.unavailable()
        outputs = [(await box.run(f"print({i} * 2)")).stdout.strip() for i in range(20)]
        await asyncio.sleep(0.5)
        zombies = [s for s in Path("/proc").glob("[0-9]*/stat") if s.read_text().rsplit(")", 1)[1].split()[0] == "Z"]
        print(os.getpid(), len([o for o in outputs if o]), len(zombies))

    asyncio.run(main())
""")


class TestAsPidOne:
    def test_twenty_code_calls_leave_no_zombie(self) -> None:
        if os.geteuid() == 0:
            wrapper = ["unshare", "--pid", "--fork", "--mount-proc"]
        else:  # bwrap makes the server pid 1 of a new namespace without privileges
            wrapper = [
                shutil.which("bwrap") or "bwrap",
                "--dev-bind",
                "/",
                "/",
                "--unshare-pid",
                "--as-pid-1",
                "--proc",
                "/proc",
                "--",
            ]
        done = subprocess.run(
            [*wrapper, sys.executable, "-c", ZOMBIE_SCRIPT],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["1", "20", "0"]  # pid 1, 20 answers, no zombie


async def test_concurrent_runs_are_bounded() -> None:
    box = CodeSandbox(timeout=5, max_concurrent=1)
    started = time.monotonic()
    code = "import time\ntime.sleep(0.6)\nprint('ok')"
    results = await asyncio.gather(box.run(code), box.run(code))
    assert [r.stdout for r in results] == ["ok\n", "ok\n"]
    assert time.monotonic() - started >= 1.2  # one after the other: the memory bound x 1, not x 2
