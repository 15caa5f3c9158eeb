"""Stopping a run cleanly on a signal: what a scheduler's preemption and a first Ctrl-C ask for.

While `StopSignals` is active (in the main thread), the first SIGTERM or SIGINT only records the
request: the loop finishes the step in progress, writes a checkpoint (with the generations in flight,
so the resume is exact) and raises `Stopped`, which the CLI turns into exit status `EXIT_STOPPED`.
A second signal, or `stop_grace_s` passing before that checkpoint is written, raises
`KeyboardInterrupt` at once (exit status 130), keeping the previous checkpoint.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any, Self

from evr1.errors import CrossesProcesses

EXIT_STOPPED = 75  # sysexits' EX_TEMPFAIL: stopped on request with a checkpoint; run it again with --resume
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(CrossesProcesses, Exception):
    """The run stopped on `signal_name` after `step` and saved `checkpoint` (a folder name)."""

    def __init__(self, signal_name: str, step: int, checkpoint: str) -> None:
        super().__init__(f"stopped on {signal_name} after step {step}, checkpoint {checkpoint}")
        self.signal_name, self.step, self.checkpoint = signal_name, step, checkpoint


class StopSignals:
    """Handlers for SIGTERM and SIGINT while the loop runs; `requested` names the first signal received."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.requested: str | None = None
        self._previous: dict[int, Any] = {}
        self._timer: threading.Timer | None = None
        self._expired = False

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():  # signals reach only the main thread's handlers
            self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        name = signal.Signals(number).name
        if self._expired:
            raise KeyboardInterrupt(f"no checkpoint within trainer.stop_grace_s={self.grace_s:g} s of {self.requested}")
        if self.requested is not None:
            raise KeyboardInterrupt(f"second signal ({name})")
        self.requested = name
        self._timer = threading.Timer(self.grace_s, self._expire)
        self._timer.daemon = True
        self._timer.start()
        print(f"\n{name}: stopping at the end of this step with a checkpoint (within {self.grace_s:g} s,"
              f" trainer.stop_grace_s); send it again to stop at once", file=sys.stderr, flush=True)

    def _expire(self) -> None:
        self._expired = True
        # a real signal to the main thread interrupts what it waits on (a lock, a socket); it runs `_handle`
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # type: ignore[arg-type]
