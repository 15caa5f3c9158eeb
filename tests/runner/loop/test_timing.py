"""`PhaseTimer`: seconds per phase on the clock it is given (the wall clock by default)."""

from __future__ import annotations

import time

from evr1.runner.loop.timing import PhaseTimer


def test_phases_accumulate_on_the_given_clock() -> None:
    ticks = iter([10.0, 10.5, 12.0, 13.0, 13.25, 20.0])  # start, data in/out, data in/out, metrics

    timer = PhaseTimer(clock=lambda: next(ticks))
    with timer("data"):  # 10.5 -> 12.0
        pass
    with timer("data"):  # 13.0 -> 13.25
        pass
    assert timer.metrics() == {"timing/data": 1.75, "timing/step": 10.0}


def test_default_clock_is_the_wall_clock() -> None:
    timer = PhaseTimer()
    with timer("sleep"):
        time.sleep(0.05)
    seconds = timer.metrics()
    assert timer.clock is time.perf_counter and 0.05 <= seconds["timing/sleep"] <= seconds["timing/step"]
