"""Rewards in worker processes (`RewardSpec.isolation = "processes"`): a reward that holds the GIL is cut at its
limit, a worker killed with -9 (held at a known point: the reward waits on a file the test controls) is replaced
and its sample scored again, one that always dies fails only its sample; the other samples score as usual.

The reward lives in a plugin file, as a user's would: the workers import it from its path."""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from reward_helpers import make

from evr1.rewards import RewardRouter
from evr1.specs import RewardSpec

PLUGIN = '''
import os
import re
import time
from pathlib import Path

from evr1.registry import REWARDS
from evr1.rewards import per_sample

HELD = Path({held!r})  # written by the worker held on a "crash-once" sample: its process id


@REWARDS.register({name!r}, override=True)
@per_sample
def faulty(inp, spec):
    """1 when the response is the answer; "hang" holds the GIL for ever, "exit" ends the worker process, and
    "crash-once" holds the first worker that meets it until the test kills it."""
    if inp.response == "hang":
        re.match(r"(a+)+$", "a" * 64 + "b")  # catastrophic backtracking in C: no thread can interrupt it
    if inp.response == "exit":
        os._exit(3)
    if inp.response == "raise":
        raise ValueError("no such answer")
    if inp.response == "crash-once" and not HELD.exists():
        HELD.write_text(str(os.getpid()))
        while True:
            time.sleep(1)
    return 1.0 if inp.response == str(inp.answer) else 0.0
'''


def plugin(tmp_path: Path, name: str) -> Path:
    """Write and import (as a user's experiment file is) a module registering the reward `name`."""
    file = tmp_path / f"faulty_{name.split('/')[1]}.py"
    file.write_text(PLUGIN.format(held=str(tmp_path / "held_pid"), name=name))
    found = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(found)
    sys.modules[file.stem] = module
    found.loader.exec_module(module)
    return tmp_path / "held_pid"


def router(name: str, timeout_s: float) -> RewardRouter:
    return RewardRouter(RewardSpec(routes={"multiple_choice": name}, format="none", isolation="processes",
                                   process_workers=2, timeout_s=timeout_s))


def test_a_reward_holding_the_gil_is_cut_at_its_limit_and_the_batch_goes_on(tmp_path: Path) -> None:
    plugin(tmp_path, "test/faulty_hang")
    inputs = [make(r, "A", "mcq", sample_id=f"s{i}") for i, r in enumerate(["A", "hang", "B", "A"])]
    outputs = router("test/faulty_hang", timeout_s=5.0).score(inputs)
    assert [o.score for o in outputs] == [1.0, 0.0, 0.0, 1.0]
    assert [o.timed_out for o in outputs] == [False, True, False, False]
    assert outputs[1].error == ("reward 'test/faulty_hang' timed out on sample s1: timed out after 5 s"
                                " (its worker process was stopped)")
    assert [o.error for o in outputs if o is not outputs[1]] == [None, None, None]


def test_a_killed_worker_is_replaced_and_its_sample_scored_again(tmp_path: Path, caplog) -> None:
    held = plugin(tmp_path, "test/faulty_kill")
    inputs = [make(r, a, "mcq", sample_id=f"s{i}") for i, (r, a) in enumerate([("A", "A"), ("crash-once", "crash-once"),
                                                                                ("B", "A")])]
    with ThreadPoolExecutor(1) as scoring, caplog.at_level(logging.WARNING, "evr1.rewards"):
        future = scoring.submit(router("test/faulty_kill", timeout_s=600.0).score, inputs)
        deadline = time.monotonic() + 300
        while not held.exists() or not held.read_text():  # the worker is held on sample s1
            assert not future.done(), future.result()
            assert time.monotonic() < deadline, "the reward was not held within 300 s"
            time.sleep(0.05)
        os.kill(int(held.read_text()), signal.SIGKILL)
        outputs = future.result(timeout=300)
    assert [(o.score, o.error, o.timed_out) for o in outputs] == [(1.0, None, False), (1.0, None, False),
                                                                   (0.0, None, False)]
    assert "worker process died (worker process exited with code -9) on sample(s) s1; scoring them again" in caplog.text


def test_a_sample_that_kills_every_worker_or_raises_fails_alone_with_the_reason(tmp_path: Path) -> None:
    plugin(tmp_path, "test/faulty_exit")
    inputs = [make(r, "A", "mcq", sample_id=f"s{i}") for i, r in enumerate(["exit", "A", "raise"])]
    outputs = router("test/faulty_exit", timeout_s=600.0).score(inputs)
    assert [o.score for o in outputs] == [0.0, 1.0, 0.0]
    assert outputs[0].error == ("reward 'test/faulty_exit' failed on sample s0: its worker process died twice"
                                " (worker process exited with code 3)")
    assert outputs[1].error is None
    file = tmp_path / "faulty_faulty_exit.py"  # the plugin's own file and line, as in the threads mode
    line = PLUGIN.splitlines().index('        raise ValueError("no such answer")') + 1
    assert outputs[2].error == f"reward 'test/faulty_exit' failed on sample s2: ValueError: no such answer (at {file}:{line})"


def test_a_reward_a_worker_cannot_import_fails_its_samples_with_the_reason() -> None:
    from evr1.registry import REWARDS
    from evr1.rewards import per_sample

    @REWARDS.register("test/defined_in_a_function", override=True)
    @per_sample
    def inner(inp, spec):  # registered when this test runs: a worker importing this module does not see it
        return 1.0

    outputs = router("test/defined_in_a_function", timeout_s=600.0).score([make("A", "A", "mcq", sample_id="s0")])
    assert outputs[0].score == 0.0 and "test/defined_in_a_function" in (outputs[0].error or "")
