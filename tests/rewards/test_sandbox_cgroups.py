"""Per-sandbox cgroups: the files written for cgroup v2 and v1 (on a fake cgroup tree, since this machine has
no delegated v2), the clean-up of a dead maker's cgroups, the real v1 limits of a bubblewrap sandbox here, and
what a real cgroup2 tree without delegated controllers allows (this hybrid machine's): the choice, the refusal,
joining, `cgroup.kill` and removal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evr1.rewards.sandbox_cgroups import Cgroups, _maker, _pid_namespace
from evr1.rewards.sandbox_local import Bubblewrap, Deadline, Process, python_binary
from evr1.specs import CodeSandboxSpec


def _own(tmp_path: Path, text: str) -> Path:
    own = tmp_path / "self-cgroup"
    own.write_text(text)
    return own


def _only(folder: Path) -> Path:
    [made] = [d for d in folder.iterdir() if d.name.startswith(f"evr1-sandbox-{_maker()}-")]
    return made


def test_v2_limits_are_written_in_a_child_of_our_cgroup(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    ours = root / "svc" / "worker"
    ours.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (ours / "cgroup.subtree_control").write_text("memory pids\n")
    found = Cgroups.find(root, _own(tmp_path, "0::/svc/worker\n"))
    assert found is not None and (found.name, found.parents) == ("cgroup v2", {"v2": ours})
    for probe in [d for d in ours.iterdir() if d.is_dir()]:  # find's probe: a fake tree keeps its files
        for file in probe.iterdir():
            file.unlink()
        probe.rmdir()
    [folder] = found.create(300, 12)
    assert folder.parent == ours and folder == _only(ours)
    assert (folder / "memory.max").read_text() == str(300 * 1024 * 1024)
    assert (folder / "pids.max").read_text() == "12"
    assert not (folder / "memory.swap.max").exists()  # optional: written only where the kernel offers it


def test_v2_without_delegated_controllers_falls_back_to_v1(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    for folder in (root / "unified", root / "memory" / "box", root / "pids"):
        folder.mkdir(parents=True)
    (root / "unified" / "cgroup.subtree_control").write_text("memory\n")  # no pids: v2 unusable
    own = _own(tmp_path, "8:pids:/\n4:memory:/box\n0::/\n")
    found = Cgroups.find(root, own)
    assert found is not None and found.name == "cgroup v1"
    assert found.parents == {"memory": root / "memory" / "box", "pids": root / "pids"}
    assert Cgroups.find(root, _own(tmp_path, "0::/\n")) is None  # neither: rlimits alone


def test_the_cgroups_of_a_dead_maker_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    parent, ns = tmp_path / "pids", _pid_namespace()
    stale, mine = parent / f"evr1-sandbox-{ns}.{dead.pid}-abc", parent / f"evr1-sandbox-{_maker()}-def"
    elsewhere = parent / f"evr1-sandbox-{ns + 1}.{dead.pid}-ghi"  # another PID namespace's: its PIDs are not ours
    others = parent / "someone-else"
    for folder in (stale, mine, elsewhere, others):
        folder.mkdir(parents=True)
    assert Cgroups("cgroup v1", {"pids": parent}).sweep() == [stale]
    assert sorted(parent.iterdir()) == sorted([mine, elsewhere, others])


FORKS = """import os, sys, time
count = 0
try:
    while count < 50:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        count += 1
except OSError:
    pass
print(count, flush=True)
sys.stdin.readline()
"""


def test_a_sandbox_here_is_limited_by_its_own_cgroups_and_leaves_none() -> None:
    sandbox = Bubblewrap(memory_mb=200, processes=8, file_mb=4, uid_base=CodeSandboxSpec().uid_base)
    if sandbox.cgroups is None:  # a machine without cgroups says what limits it instead
        assert sandbox.limits.startswith(("rlimits", "per-sandbox uid"))
        return
    assert sandbox.limits.startswith(f"{sandbox.cgroups.name} (memory, processes per sandbox)")
    deadline = Deadline(60)
    process = sandbox.start(FORKS, deadline)
    try:
        forked = int(process.readline(1 << 10))  # held here: the program waits for a line
        folders = [_only(parent) for parent in sandbox.cgroups.parents.values()]
        files = {"pids.max": "pids", "memory.max": "memory", "memory.limit_in_bytes": "memory"}
        limits = {what: (f / name).read_text().strip() for f in folders for name, what in files.items() if (f / name).exists()}
        assert limits == {"pids": "10", "memory": str(204 << 20)}  # processes + 2 (bwrap's), memory_mb + file_mb
        assert 0 < forked < 8  # as root RLIMIT_NPROC binds nothing: the pids cgroup refused the forks
    finally:
        process.send(b"\n")
        process.close()
        deadline.close()
    assert not any(folder.exists() for folder in folders)


def test_a_sandbox_that_cannot_start_leaves_no_cgroup() -> None:
    sandbox = Bubblewrap(memory_mb=200, processes=8, file_mb=4, uid_base=CodeSandboxSpec().uid_base)
    if sandbox.cgroups is None:
        assert sandbox.limits.startswith(("rlimits", "per-sandbox uid"))
        return
    sandbox.bwrap = "/nonexistent/bwrap"  # the cgroups are made, then the sandbox fails to start
    deadline = Deadline(60)
    try:
        process = sandbox.start("print(1)", deadline)
        assert process.wait() == 127 and process.output(1 << 10) == b""
        process.close()
    finally:
        deadline.close()
    for parent in sandbox.cgroups.parents.values():
        assert not list(parent.glob(f"evr1-sandbox-{_maker()}-*"))


@pytest.fixture
def real_v2(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the root of a real cgroup2 tree, our own cgroup in it): the mounted one, else one mounted here as root."""
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split(" - ")[1].split()[0] == "cgroup2"]  # fmt: skip
    mount, mounted = (Path(mounts[0]), False) if mounts else (tmp_path / "cg2", True)
    if mounted:
        mount.mkdir()
        made = subprocess.run(["mount", "-t", "cgroup2", "none", str(mount)], check=False, capture_output=True,
                              text=True)  # fmt: skip
        if made.returncode:
            pytest.skip(f"no cgroup2 tree here, and none can be mounted: {made.stderr.strip() or made.returncode}")
    [own] = [line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")]
    try:
        yield mount, mount / own.lstrip("/")
    finally:
        if mounted:
            subprocess.run(["umount", str(mount)], check=True)


def test_a_real_cgroup2_tree_is_used_only_with_memory_and_pids_delegated(real_v2: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:  # fmt: skip
    mount, ours = real_v2
    found = Cgroups.find(mount, _own(tmp_path, f"0::/{ours.relative_to(mount)}\n"))  # its v2 line alone
    v2 = Cgroups("cgroup v2", {"v2": ours})
    if {"memory", "pids"} <= set((ours / "cgroup.subtree_control").read_text().split()):
        assert found is not None and (found.name, found.parents) == ("cgroup v2", {"v2": ours})
        [folder] = v2.create(300, 12)
        assert ((folder / "memory.max").read_text(), (folder / "pids.max").read_text()) == (f"{300 << 20}\n", "12\n")
        assert Cgroups.remove(folder)
    else:  # as on a hybrid host, whose memory and pids controllers are bound to v1: the kernel offers no such file
        assert found is None
        with pytest.raises(OSError):
            v2.create(300, 12)
    assert not list(ours.glob(f"evr1-sandbox-{_maker()}-*"))  # the refused one removed too


HELD = ("import os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        time.sleep(60)\n"
        "print(os.getpid(), flush=True)\ntime.sleep(60)")


def test_a_dead_makers_cgroup2_is_killed_and_removed(real_v2: tuple[Path, Path]) -> None:
    mount, ours = real_v2
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = ours / f"evr1-sandbox-{_pid_namespace()}.{dead.pid}-{os.getpid()}"
    stale.mkdir()
    deadline = Deadline(60)
    process = Process([python_binary(), "-I", "-S", "-c", HELD], deadline, cgroups=[stale])  # joins, then starts
    try:
        pid = int(process.readline(1 << 10))  # held here: it and its 3 children in the cgroup
        assert len((stale / "cgroup.procs").read_text().split()) == 4
        assert f"0::/{stale.relative_to(mount)}\n" in Path(f"/proc/{pid}/cgroup").read_text()
        assert Cgroups("cgroup v2", {"v2": ours}).sweep() == [stale]  # cgroup.kill, then rmdir once all are gone
        assert process.wait() == -9 and not stale.exists()
    finally:
        if stale.exists():  # the test failed: end what runs there
            (stale / "cgroup.kill").write_text("1")
        process.close()
        deadline.close()
