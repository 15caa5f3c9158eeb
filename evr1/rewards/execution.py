"""Running reward functions with per-sample failure isolation and timeouts.

Each route's batch runs in its own daemon thread, all routes concurrently. A `@per_sample`
function is called sample by sample, so one sample that raises or overruns `timeout_s` is
reported alone: its worker thread is abandoned and a fresh one continues with the next sample.
Other batch functions get `timeout_s × batch size` for the whole batch. Async functions run in
their own event loop. Thread timeouts cannot stop a C call that holds the GIL (a catastrophic
regular expression): scorers must stay linear-time, and the slow libraries (math-verify, code
execution) run in processes with their own hard limits.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evr1.rewards.contract import RewardFn, RewardInput, sample_function

if TYPE_CHECKING:
    from evr1.specs import RewardSpec


@dataclass(frozen=True)
class Failure:
    """A sample a reward function could not score."""

    message: str
    timed_out: bool = False


_PENDING = object()


_EVR1 = Path(__file__).resolve().parents[1]
_INSTALLED = tuple({Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


def failure_of(exc: BaseException) -> Failure:
    """The `Failure` of a sample whose scorer raised `exc` (a timeout counts as timed out)."""
    timed_out = isinstance(exc, (TimeoutError, asyncio.TimeoutError))
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return Failure(text + _where(exc), timed_out)


def _where(exc: BaseException) -> str:
    """` (at FILE:LINE)` of the innermost frame in a plugin's own code (neither evr1 nor an installed package,
    nor the standard library), so that a reward bug in an experiment file names its line; else ''."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = Path(frame.filename).resolve()
        if not path.is_relative_to(_EVR1) and not any(path.is_relative_to(p) for p in _INSTALLED) and path.exists():
            return f" (at {frame.filename}:{frame.lineno})"
    return ""


class _Run:
    """One reward function over one batch, watched by the caller's thread."""

    def __init__(self, fn: RewardFn, inputs: Sequence[RewardInput], spec: RewardSpec, wake: threading.Event) -> None:
        self.fn, self.inputs, self.spec, self.wake = fn, list(inputs), spec, wake
        self.results: list[Any] = [_PENDING] * len(self.inputs)
        self.sample_fn = sample_function(fn)
        self.lock = threading.Lock()
        self.generation = 0
        self.index = 0
        self.started = time.monotonic()
        self.finished = not self.inputs

    def start(self, first: int = 0) -> None:
        target = self._per_sample if self.sample_fn is not None else self._batch
        self.index, self.started = first, time.monotonic()
        threading.Thread(target=target, args=(self.generation, first), daemon=True, name="evr1-reward").start()

    def _per_sample(self, generation: int, first: int) -> None:
        for i in range(first, len(self.inputs)):
            with self.lock:
                if generation != self.generation:
                    return
                self.index, self.started = i, time.monotonic()
            try:
                value = self.sample_fn(self.inputs[i], self.spec)  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001 - this sample's failure
                value = failure_of(exc)
            with self.lock:
                if generation != self.generation:
                    return
                self.results[i] = value
        self._finish(generation)

    def _batch(self, generation: int, first: int) -> None:
        try:
            values = self.fn(self.inputs, self.spec)
            if inspect.isawaitable(values):
                values = asyncio.run(_awaited(values))
            values = list(values)
            if len(values) != len(self.inputs):
                raise ValueError(f"returned {len(values)} values for {len(self.inputs)} inputs")
        except Exception as exc:  # noqa: BLE001 - the whole batch failed
            values = [failure_of(exc)] * len(self.inputs)
        with self.lock:
            if generation != self.generation:
                return
            self.results = [failure_of(v) if isinstance(v, BaseException) else v for v in values]
        self._finish(generation)

    def _finish(self, generation: int) -> None:
        with self.lock:
            if generation == self.generation:
                self.finished = True
        self.wake.set()

    def check(self, now: float) -> float | None:
        """Handle an overrun; return the next deadline, or None when finished."""
        timeout = self.spec.timeout_s
        with self.lock:
            if self.finished:
                return None
            if self.sample_fn is None:
                deadline = self.started + timeout * len(self.inputs)
                if now < deadline:
                    return deadline
                self.generation += 1
                message = f"timed out after {timeout * len(self.inputs):g} s for {len(self.inputs)} samples"
                self.results = [Failure(message, True) if r is _PENDING else r for r in self.results]
                self.finished = True
                return None
            deadline = self.started + timeout
            if now < deadline:
                return deadline
            self.generation += 1
            self.results[self.index] = Failure(f"timed out after {timeout:g} s", True)
            following = self.index + 1
            if following >= len(self.inputs):
                self.finished = True
                return None
        self.start(following)
        return time.monotonic() + timeout


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def run_all(jobs: Sequence[tuple[RewardFn, Sequence[RewardInput]]], spec: RewardSpec) -> list[list[Any]]:
    """Run each (function, inputs) job concurrently; per input a scorer value or a `Failure`."""
    wake = threading.Event()
    runs = [_Run(fn, inputs, spec, wake) for fn, inputs in jobs]
    for run in runs:
        if not run.finished:
            run.start()
    while True:
        wake.clear()
        now = time.monotonic()
        deadlines = [d for d in (run.check(now) for run in runs) if d is not None]
        if not deadlines:
            return [run.results for run in runs]
        wake.wait(max(0.0, min(deadlines) - now))
