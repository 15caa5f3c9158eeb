"""A watchdog that ends a driver's helper processes when the driver dies, even by `kill -9`.

Ray fate-shares its raylet and workers with the driver that started it, but not the raylet's
agents (`ray::DashboardAgent`, `ray::RuntimeEnvAgent`, about 225 MB): they notice the raylet's
death and then hang reporting it to the dead GCS. `watch_descendants()` starts one small process
(in its own session, so Ctrl-C does not reach it) that holds the read end of a pipe whose write
end only the driver has (close-on-exec: no child inherits it). While the pipe is open it records
the driver's descendants every `POLL_S` seconds, and at once on `sync()` (called when Ray has
started, so its helpers are known before any step runs); when the driver dies the pipe reads EOF
and every recorded process still alive (same pid and start time) gets SIGKILL. A driver that ends
normally has already stopped them (`ray.shutdown()`), so nothing is left to kill. Linux only.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

POLL_S = 2.0  # after `sync()` only late helpers need it: Ray fate-shares its workers with the raylet
_WATCHED: dict[int, subprocess.Popen] = {}  # driver pid -> its watchdog


def watch_descendants() -> None:
    """Start this process's watchdog (once per process; nothing off Linux)."""
    if not sys.platform.startswith("linux") or os.getpid() in _WATCHED:
        return
    read, write = os.pipe()  # both ends close-on-exec; the watchdog gets `read` as its stdin
    proc = subprocess.Popen([sys.executable, "-m", "evr1.runner.ray.reaper", str(os.getpid())], stdin=read,
                            stdout=subprocess.PIPE, start_new_session=True)
    os.close(read)
    proc.evr1_pipe = write  # type: ignore[attr-defined]  # open for the driver's lifetime
    _WATCHED[os.getpid()] = proc


def sync() -> None:
    """Return once the watchdog has recorded this process's descendants as they are now."""
    proc = _WATCHED.get(os.getpid())
    if proc is not None:
        os.write(proc.evr1_pipe, b"s")
        proc.stdout.read(1)


def _start_time(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _watch(driver: int) -> None:
    tracked: dict[int, int] = {}
    while True:
        asked = bool(select.select([0], [], [], POLL_S)[0])
        if asked and not os.read(0, 64):  # EOF: the driver is gone
            break
        for pid in _descendants(driver):
            if pid != os.getpid() and (start := _start_time(pid)) is not None:
                tracked[pid] = start
        if asked:
            os.write(1, b"k")
    for pid, start in tracked.items():
        if _start_time(pid) == start:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    _watch(int(sys.argv[1]))
