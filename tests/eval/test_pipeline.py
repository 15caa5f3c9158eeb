"""The prefetching pipeline: order kept, nothing lost, bounded look-ahead, work overlapped."""

from __future__ import annotations

import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.eval.samples import batched, prefetched


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 20), workers=st.integers(1, 3), ahead=st.integers(1, 6), size=st.integers(1, 5))
def test_prefetch_keeps_order_and_every_item(n: int, workers: int, ahead: int, size: int) -> None:
    out = [x for batch in batched(prefetched(range(n), lambda x: x * 10, workers, ahead), size) for x in batch]
    assert out == [x * 10 for x in range(n)]


def test_prefetch_runs_ahead_but_bounded() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def work(x: int) -> int:
        with lock:
            started.append(x)
        return x

    gen = prefetched(range(100), work, workers=2, ahead=3)
    assert next(gen) == 0
    time.sleep(0.05)
    assert 3 <= len(started) <= 4  # the next items are being prepared while item 0 is consumed
    assert list(gen) == list(range(1, 100))


def test_prefetch_overlaps_preparation_with_consumption() -> None:
    def slow(x: int) -> int:
        time.sleep(0.05)
        return x

    start = time.perf_counter()
    for _ in prefetched(range(6), slow, workers=3, ahead=3):
        time.sleep(0.05)  # "generation"
    assert time.perf_counter() - start < 0.55  # sequential would take 0.6 s
