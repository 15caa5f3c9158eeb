"""The stop signals: a first SIGTERM or SIGINT is a request, a second one (or the grace period running out) stops
at once, and the handlers in place before are back afterwards. Real signals, sent to this process."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from evr1.runner.loop.preemption import StopSignals


@pytest.mark.parametrize(("first", "second"), [(signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGINT)])
def test_a_first_signal_is_a_request_and_a_second_stops_at_once(first: int, second: int, capsys) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with StopSignals(grace_s=3600) as signals:
        assert signals.requested is None
        os.kill(os.getpid(), first)  # the handler runs in this (main) thread before kill returns to the next line
        assert signals.requested == signal.Signals(first).name
        with pytest.raises(KeyboardInterrupt, match="second signal"):
            os.kill(os.getpid(), second)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    err = capsys.readouterr().err
    assert f"{signal.Signals(first).name}: stopping at the end of this step with a checkpoint" in err
    assert "trainer.stop_grace_s" in err


def test_no_checkpoint_within_the_grace_period_stops_at_once() -> None:
    never = threading.Event()  # the step that does not end: only the grace period's interrupt ends this wait
    with StopSignals(grace_s=0.2) as signals:
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt, match=r"no checkpoint within trainer.stop_grace_s=0.2 s of SIGTERM"):
            never.wait(600)
        assert signals.requested == "SIGTERM"


def test_outside_the_main_thread_nothing_is_installed() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen = []

    def enter() -> None:
        with StopSignals(grace_s=1.0):
            seen.append(signal.getsignal(signal.SIGTERM))

    worker = threading.Thread(target=enter)
    worker.start()
    worker.join()
    assert seen == [before]
