"""Ray nodes as `ray start --block` processes of a test's own: start, stop, and a free port for them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

RAY = str(Path(sys.executable).parent / "ray")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def start_node(command: list[str], env: dict[str, str], folder: Path) -> subprocess.Popen:
    """Run `command` (a `ray start ... --block`) in `folder`, its output in `folder/ray_start.log`, in a session of
    its own so that `stop_node` reaches every process it starts."""
    with (folder / "ray_start.log").open("w") as log:
        return subprocess.Popen(command, env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_node(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)  # ray start --block stops its node's processes when it ends
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
