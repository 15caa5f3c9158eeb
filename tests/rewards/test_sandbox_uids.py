"""Host root without a cgroup: each sandbox runs as a uid of its own, so that RLIMIT_NPROC counts per sandbox.

The slots are tested on a folder of the test's; the sandboxes for real, as root, with the cgroup forced off
(`Bubblewrap.cgroups = None`, what `Cgroups.find` returns on a machine that allows none)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from evr1.rewards.sandbox_local import Bubblewrap, Deadline
from evr1.rewards.sandbox_uids import UidSlots, userns_filter
from evr1.specs import CodeSandboxSpec

ROOT = pytest.mark.skipif(os.geteuid() != 0 or userns_filter(os.uname().machine) is None,
                          reason="only host root on x86_64 or aarch64 runs each sandbox as a uid of its own")


def test_slots_are_distinct_while_held_and_reused_once_released(tmp_path: Path) -> None:
    slots = UidSlots(5000, tmp_path / "locks", count=3)
    first, second = slots.take(), slots.take()
    assert (first.uid, second.uid) == (5000, 5001)
    first.release()
    first.release()  # idempotent
    third, fourth = slots.take(), slots.take()
    assert (third.uid, fourth.uid) == (5000, 5002)
    with pytest.raises(OSError, match="all 3 sandbox uids from 5000 are in use"):
        slots.take()
    for slot in (second, third, fourth):
        slot.release()


def test_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "locks"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with pytest.raises(PermissionError, match="writable by it alone"):
        UidSlots(5000, folder).take()


def test_the_user_namespace_filter_exists_for_known_machines_only() -> None:
    assert len(userns_filter("x86_64")) == len(userns_filter("aarch64")) == 13 * 8  # 13 instructions of 8 bytes
    assert userns_filter("riscv64") is None


PROBE = """import ctypes, os, sys, time
forked = 0
while forked < 50:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    forked += 1
status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
unshare = ctypes.CDLL(None, use_errno=True).unshare(0x10000000)  # CLONE_NEWUSER
print(forked, os.getuid(), os.getgid(), os.getgroups(), {status[k] for k in ("CapInh", "CapPrm", "CapEff", "CapAmb")},
      status["NoNewPrivs"], unshare, ctypes.get_errno(), oct(os.stat(".").st_mode & 0o777), flush=True)
sys.stdin.readline()
"""


def _running_as(uid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            if f"Uid:\t{uid}\t" in status.read_text():
                found.append(int(status.parent.name))
        except OSError:
            pass
    return found


@ROOT
def test_each_sandbox_has_its_own_uid_and_process_limit() -> None:
    spec = CodeSandboxSpec()
    sandbox = Bubblewrap(memory_mb=200, processes=8, file_mb=4, uid_base=spec.uid_base)
    sandbox.cgroups = None  # as where no cgroup can be made
    assert sandbox.own_uid and sandbox.limits.startswith("per-sandbox uid (from 2000000) + RLIMIT_NPROC")
    deadline = Deadline(60)
    processes = [sandbox.start(PROBE, deadline) for _ in range(2)]  # at once: two uids
    try:
        seen = [process.readline(1 << 10).decode().split(maxsplit=1) for process in processes]  # held here
        uids = [int(rest.split()[0]) for _, rest in seen]
        assert len(set(uids)) == 2 and all(uid >= spec.uid_base for uid in uids)
        for (forked, rest), uid in zip(seen, uids, strict=True):
            # 8 processes of its uid: the runner and 7 children; no capability, no new user namespace (EPERM)
            assert forked == "7"
            assert rest == f"{uid} {uid} [] {{'0000000000000000'}} 1 -1 1 0o777\n"
            assert len(_running_as(uid)) == 8
    finally:
        for process in processes:
            process.send(b"\n")
            process.close()
        deadline.close()
    for uid in uids:  # nothing of it runs, and its slot is free for the next sandbox
        assert _running_as(uid) == []
        fd = os.open(sandbox.uids.folder / f"{uid - spec.uid_base}.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
