"""Time per phase of a step (`timing/<phase>` metrics): wall clock, or any clock given (e.g. CPU time)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class PhaseTimer:
    """Accumulates seconds per named phase: `with timer("rollout"): ...`.

    `clock`: seconds from a fixed origin; the wall clock by default (`time.process_time`: this process's
    CPU time, every thread counted, the steadier figure on a shared machine).
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds: dict[str, float] = {}
        self.clock = clock
        self._start = clock()

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        start = self.clock()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + self.clock() - start

    def metrics(self) -> dict[str, float]:
        total = self.clock() - self._start
        return {**{f"timing/{k}": v for k, v in self.seconds.items()}, "timing/step": total}
