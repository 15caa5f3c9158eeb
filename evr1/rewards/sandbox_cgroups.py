"""Per-sandbox memory and process-count limits through a cgroup, where this machine lets us create one.

cgroup v2: our own cgroup (the "0::PATH" line of /proc/self/cgroup) must already delegate `memory` and
`pids` to its children (its `cgroup.subtree_control`); each sandbox gets a child cgroup with `memory.max`,
`memory.swap.max` 0 and `pids.max`. cgroup v1 (hybrid hosts): a child of our cgroup in the `memory`
hierarchy (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` where swap is accounted) and one in
`pids` (`pids.max`). `find` tries v2 then v1 by creating and removing a probe cgroup, and returns None when
neither works; the sandbox's rlimits then stand alone (`sandbox_uids` says how they bind host root).

A sandbox's cgroups are named `evr1-sandbox-<maker>-<token>`, the maker being the PID namespace and PID of the
process that made them, and removed when the sandbox ends; `find` also removes those left by a process of its
own PID namespace that died before it could (their processes killed first, by `cgroup.kill` on v2), so a
crashed reward worker leaves nothing behind beyond the next start. Cgroups made in another PID namespace
(another container sharing the hierarchy) are never touched: their PIDs mean nothing here.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import signal
import time
from pathlib import Path

logger = logging.getLogger(__name__)

# per hierarchy: (file, what it gets, required); memory limits in bytes, process limits in processes
_SETTINGS = {
    "v2": (("memory.max", "memory", True), ("memory.swap.max", "zero", False), ("pids.max", "pids", True)),
    "memory": (("memory.limit_in_bytes", "memory", True), ("memory.memsw.limit_in_bytes", "memory", False)),
    "pids": (("pids.max", "pids", True),),
}


class Cgroups:
    """Where this process may create sandbox cgroups: `parents` maps "v2" or "memory"/"pids" to a folder."""

    def __init__(self, name: str, parents: dict[str, Path]) -> None:
        self.name, self.parents = name, parents

    @classmethod
    def find(cls, root: Path = Path("/sys/fs/cgroup"), own: Path = Path("/proc/self/cgroup")) -> Cgroups | None:
        """The cgroup v2 or v1 setup that works here, or None."""
        try:
            paths = {}
            for line in own.read_text().splitlines():
                _, controllers, path = line.split(":", 2)
                for controller in controllers.split(","):
                    paths[controller] = path.lstrip("/")
        except (OSError, ValueError):
            return None
        candidates = []
        if "" in paths:
            base = (root if (root / "cgroup.controllers").exists() else root / "unified") / paths[""]
            try:
                if {"memory", "pids"} <= set((base / "cgroup.subtree_control").read_text().split()):
                    candidates.append(cls("cgroup v2", {"v2": base}))
            except OSError:
                pass
        if "memory" in paths and "pids" in paths:
            candidates.append(cls("cgroup v1", {c: root / c / paths[c] for c in ("memory", "pids")}))
        for candidate in candidates:
            try:
                for folder in candidate.create(64, 8):
                    cls.remove(folder)
            except OSError:
                continue
            candidate.sweep()
            return candidate
        return None

    def sweep(self) -> list[Path]:
        """Remove the sandbox cgroups whose maker is dead, killing what still runs in them; the folders removed."""
        removed = []
        prefix = f"evr1-sandbox-{_pid_namespace()}."
        for parent in self.parents.values():
            for folder in parent.glob(f"{prefix}*-*"):
                maker = folder.name[len(prefix) :].split("-")[0]
                if not maker.isdigit() or _alive(int(maker)):
                    continue
                _kill_all(folder)
                if self.remove(folder):
                    removed.append(folder)
        return removed

    def create(self, memory_mb: int, processes: int) -> list[Path]:
        """New child cgroups for one sandbox with these limits (their `cgroup.procs` are where it joins)."""
        values = {"memory": str(memory_mb << 20), "zero": "0", "pids": str(processes)}
        token = secrets.token_hex(6)
        folders: list[Path] = []
        try:
            for kind, parent in self.parents.items():
                folder = parent / f"evr1-sandbox-{_maker()}-{token}"
                folder.mkdir()
                folders.append(folder)
                for name, value, required in _SETTINGS[kind]:
                    path = folder / name
                    if required or path.exists():
                        path.write_text(values[value])
        except OSError:
            for folder in folders:
                self.remove(folder)
            raise
        return folders

    @staticmethod
    def remove(folder: Path) -> bool:
        """Remove a sandbox's cgroup once its processes are gone (waiting while the kernel reports it busy);
        False, with a warning, when it stays."""
        for attempt in range(50):
            try:
                folder.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    logger.warning("could not remove the sandbox cgroup %s: %s", folder, exc)
                    return False
                time.sleep(0.01 * (attempt + 1))
        logger.warning("could not remove the sandbox cgroup %s: its processes did not end", folder)
        return False


def _kill_all(folder: Path) -> None:
    """SIGKILL every process in a cgroup: at once through `cgroup.kill` (v2, Linux 5.14+), else one by one."""
    try:
        fd = os.open(folder / "cgroup.kill", os.O_WRONLY)  # never created: only the kernel's
        try:
            os.write(fd, b"1")
            return
        finally:
            os.close(fd)
    except OSError:
        pass
    try:
        pids = (folder / "cgroup.procs").read_text().split()
    except OSError:
        pids = []
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def _pid_namespace() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


def _maker() -> str:
    """This process in a cgroup's name: `<PID namespace>.<PID>`."""
    return f"{_pid_namespace()}.{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
