"""The code sandbox's seccomp filter (code.py passes it to bubblewrap): the system calls a
sandboxed calculator never needs, refused with EPERM, compiled to BPF by libseccomp through
ctypes (no Python binding to install). Without libseccomp there is no filter, and code.py
does not offer the tool: the filter is part of the memory bound, not only of the kernel's
attack surface."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

# System calls refused (EPERM) inside the sandbox: debugging other processes, mounts and
# namespaces, kernel keyrings and modules, BPF, perf, userfaultfd, io_uring, clock and reboot.
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "quotactl",
    "iopl",
    "ioperm",
    "lookup_dcookie",
    "vhangup",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "name_to_handle_at",
    "open_by_handle_at",
    "personality",
    "uselib",
    # Memory that RLIMIT_AS does not count and that outlives the process's own mappings:
    # SysV shared memory (a segment stays resident after shmdt, until the IPC namespace
    # dies), memfd files (each up to RLIMIT_FSIZE, one per descriptor), POSIX message
    # queues, and socket buffers (a socket pair queues megabytes in the kernel; the
    # sandbox has no network to reach anyway). Semaphores and message queues go with them.
    "shmget",
    "shmat",
    "shmdt",
    "shmctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "memfd_create",
    "memfd_secret",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "socket",
    "socketpair",
)
# fcntl(fd, F_SETPIPE_SZ, n) is refused too, so every pipe keeps the kernel's default buffer
# and descriptors times that default bounds what pipes can hold (code.py counts it).
F_SETPIPE_SZ = 1031


@functools.cache
def seccomp_filter() -> bytes:
    """The compiled BPF filter denying DENIED_SYSCALLS, built with libseccomp; b"" without it."""
    name = ctypes.util.find_library("seccomp")
    if not name:
        return b""
    lib = ctypes.CDLL(name)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCompare),
    ]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SCMP_ACT_ALLOW, SCMP_ACT_ERRNO(EPERM)
    ctx = lib.seccomp_init(allow)  # other architectures (32-bit calls) are killed by default
    if not ctx:
        return b""
    read, write = os.pipe()
    try:
        for call in DENIED_SYSCALLS:
            number = lib.seccomp_syscall_resolve_name(call.encode())
            if number >= 0 and lib.seccomp_rule_add(ctx, deny, number, 0) != 0:
                return b""
        fcntl = lib.seccomp_syscall_resolve_name(b"fcntl")
        set_pipe_size = _ArgCompare(1, SCMP_CMP_EQ, F_SETPIPE_SZ, 0)  # the second argument, the command
        if fcntl < 0 or lib.seccomp_rule_add_array(ctx, deny, fcntl, 1, ctypes.byref(set_pipe_size)) != 0:
            return b""
        if lib.seccomp_export_bpf(ctx, write) != 0:
            return b""
        os.close(write)
        write = -1
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        lib.seccomp_release(ctx)
        os.close(read)
        if write >= 0:
            os.close(write)


SCMP_CMP_EQ = 4  # libseccomp's enum scmp_compare


class _ArgCompare(ctypes.Structure):
    """libseccomp's struct scmp_arg_cmp: argument `arg` compared by `op` with `datum_a`."""

    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]
