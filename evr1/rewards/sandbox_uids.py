"""A uid of its own per running sandbox, for host root where no cgroup can be made.

The kernel exempts uid 0 from RLIMIT_NPROC (and a user namespace made by root maps its processes to uid 0),
so as host root without a pids cgroup the program a sandbox runs first switches to a uid and gid of its own
(`sandbox_become.py`): slot k is uid and gid `base + k`, and RLIMIT_NPROC, which counts the
processes of a uid, then counts that sandbox alone. A slot is held by an exclusive `flock` on
`<folder>/<k>.lock` (a folder only root may write) while its sandbox runs, so the sandboxes of every process on
the machine get distinct uids; it is released after every process of the sandbox has been reaped, so the next
holder starts from none (a holder that dies takes its locks along while `--die-with-parent` is still killing
its sandboxes: for those milliseconds a new sandbox may share a uid's count with one of them). The uids `base`
to `base + count - 1` must belong to no account or other process.
"""

from __future__ import annotations

import fcntl
import os
import stat
import struct
from pathlib import Path

FOLDER = Path("/run/evr1-sandbox-uids")


class UidSlot:
    """One held uid; `release` (idempotent) frees it for the next sandbox."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid, self._fd = uid, fd

    def release(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)  # drops the flock


class UidSlots:
    """Slots `base + k`, k < `count`, locked in `folder` (created 0700; refused unless root's and closed to others)."""

    def __init__(self, base: int, folder: Path = FOLDER, count: int = 4096) -> None:
        self.base, self.folder, self.count = base, folder, count

    def take(self) -> UidSlot:
        """The lowest free slot, held until released; OSError when the folder is unsafe or every slot is taken."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            info = os.fstat(folder)
            if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise PermissionError(f"{self.folder} must be owned by uid {os.geteuid()} and writable by it alone")
            for k in range(self.count):
                fd = os.open(f"{k}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return UidSlot(self.base + k, fd)
        finally:
            os.close(folder)
        raise OSError(f"all {self.count} sandbox uids from {self.base} are in use ({self.folder})")


# the system call numbers of clone, unshare and clone3 per machine, with its seccomp audit architecture
_CALLS = {"x86_64": (0xC000003E, 56, 272, 435), "aarch64": (0xC00000B7, 220, 97, 435)}
_CLONE_NEWUSER = 0x10000000


def userns_filter(machine: str) -> bytes | None:
    """A seccomp program (classic BPF, for bwrap's `--seccomp`) refusing new user namespaces, or None for a machine
    without its numbers here.

    bwrap's `--disable-userns` exists only with `--unshare-user`, and a user namespace of its own would let the
    answer mount file systems (an unbounded tmpfs among them). Refused with EPERM: `clone` and `unshare` with
    CLONE_NEWUSER, and every call of another ABI (x32, i386); `clone3`, whose flags a filter cannot read, gets
    ENOSYS, upon which the C library falls back to `clone`. Everything else is allowed.
    """
    if machine not in _CALLS:
        return None
    arch, clone, unshare, clone3 = _CALLS[machine]
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ/JGE/JSET|K, BPF_RET|K
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO
    program = [  # (code, jump if true, jump if false, k); jumps count the instructions skipped
        (load, 0, 0, 4), (jeq, 0, 9, arch),  # 0-1: seccomp_data.arch; another ABI: refused
        (load, 0, 0, 0), (jge, 7, 0, 0x40000000),  # 2-3: seccomp_data.nr; x32: refused
        (jeq, 7, 0, clone3), (jeq, 2, 0, unshare), (jeq, 1, 0, clone), (ret, 0, 0, allow),  # 4-7
        (load, 0, 0, 16), (jset, 1, 0, _CLONE_NEWUSER), (ret, 0, 0, allow),  # 8-10: the flags (args[0], low half)
        (ret, 0, 0, eperm), (ret, 0, 0, enosys),  # 11-12
    ]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
