"""Functions run in persistent worker processes with a hard, process-level timeout.

A call that overruns its timeout kills its worker (which is then replaced), so code that cannot
be interrupted from a thread (sympy inside math-verify, whose own timeout uses `signal.alarm`
and works only in a main thread) never blocks the caller. A worker is `python -m
evr1.rewards.process_worker module:function [warm_up [warm_up_args]]`, speaking JSON lines over its stdin/stdout: it is
independent of how the parent was started (a script, `python -`, a notebook, a threaded server),
which `multiprocessing`'s spawn is not. Arguments and results must be JSON values.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from typing import Any


class WorkerCrashed(RuntimeError):
    """The worker process died, or could not start."""


class _Worker:
    def __init__(self, target: str, warm_up: str | None, warm_up_args: tuple[Any, ...], startup_timeout: float) -> None:
        command = [sys.executable, "-m", "evr1.rewards.process_worker", target]
        command += [warm_up, json.dumps(list(warm_up_args))] if warm_up else []
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._buffer = b""
        try:
            ready = self._read(startup_timeout)
        except TimeoutError:
            self.close()
            raise WorkerCrashed(f"worker for {target} did not start within {startup_timeout:g} s") from None
        if ready.get("status") != "ready":
            self.close()
            raise WorkerCrashed(f"worker for {target} failed to start: {ready.get('value')}")

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError(f"timed out after {timeout:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerCrashed(f"worker process exited with code {self.process.wait()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def call(self, args: tuple[Any, ...], timeout: float) -> Any:
        try:
            self.process.stdin.write(json.dumps(list(args)).encode() + b"\n")  # type: ignore[union-attr]
            self.process.stdin.flush()  # type: ignore[union-attr]
        except BrokenPipeError:
            raise WorkerCrashed(f"worker process exited with code {self.process.wait()}") from None
        reply = self._read(timeout)
        if reply["status"] == "error":
            raise RuntimeError(reply["value"])
        return reply["value"]

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


class WorkerPool:
    """`size` workers running `module:function` (after `warm_up(*warm_up_args)`, e.g. imports); `call` waits for a
    free one. A worker that overruns a call or dies is closed, and a new one started for the next call."""

    def __init__(self, target: str, size: int, warm_up: str | None = None, startup_timeout: float = 120.0,
                 warm_up_args: tuple[Any, ...] = ()) -> None:
        self.target, self.size, self.warm_up, self.startup_timeout = target, size, warm_up, startup_timeout
        self.warm_up_args = warm_up_args
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        for _ in range(size):
            self._idle.put(None)  # started lazily

    def call(self, *args: Any, timeout: float) -> Any:
        worker = self._idle.get()
        try:
            if worker is None:
                worker = _Worker(self.target, self.warm_up, self.warm_up_args, self.startup_timeout)
            return worker.call(args, timeout)
        except (TimeoutError, WorkerCrashed, OSError, ValueError):
            if worker is not None:
                worker.close()
            worker = None
            raise
        finally:
            self._idle.put(worker)

    def close(self) -> None:
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            if worker is not None:
                worker.close()


_POOLS: dict[tuple[str, int, str | None, str], WorkerPool] = {}
_LOCK = threading.Lock()


def shared_pool(target: str, size: int, warm_up: str | None = None, warm_up_args: tuple[Any, ...] = ()) -> WorkerPool:
    """The process-wide pool for `target` with `size` workers warmed up by `warm_up(*warm_up_args)` (created on
    first use)."""
    with _LOCK:
        key = (target, size, warm_up, json.dumps(list(warm_up_args)))
        if key not in _POOLS:
            _POOLS[key] = WorkerPool(target, size, warm_up, warm_up_args=warm_up_args)
        return _POOLS[key]


@atexit.register
def _close_all() -> None:
    for p in _POOLS.values():
        p.close()
