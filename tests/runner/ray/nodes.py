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
    its own so that `stop_node` reaches every process it starts.

    The node does not drain on SIGTERM (`RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S=0`): a test's node runs nothing by
    then, and draining asks the GCS, which the same signal stops, so it waited out its 30 s timeout every time."""
    env = {**env, "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
    with (folder / "ray_start.log").open("w") as log:
        return subprocess.Popen(command, env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_node(proc: subprocess.Popen) -> None:
    """Stop the node `start_node` started: SIGTERM to its session (ray start --block then stops its node's processes),
    SIGKILL to whatever of the session is left once it has ended, or after 60 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
