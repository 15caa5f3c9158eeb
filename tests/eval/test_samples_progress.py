"""The per-benchmark progress bar of the evaluation loop: done out of total (resumed samples included), failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.eval.api import reward_router
from evr1.eval.responders import ScriptedResponder
from evr1.eval.samples import RunOptions, run_samples
from evr1.registry import BENCHMARKS
from evr1.specs import JudgeSpec


def _run(root: Path, samples: Path, responder: ScriptedResponder, progress: bool | None) -> None:
    bench = BENCHMARKS.get("mvbench")
    records = bench.load(root)
    router = reward_router(bench, JudgeSpec(), {r.problem_type.value for r in records})
    run_samples(bench, records, responder, samples, "sid", router, RunOptions(batch_size=2, progress=progress))


def _bars(err: str) -> list[str]:
    return [line for line in err.replace("\r", "\n").splitlines() if line.startswith("mvbench")]


def test_progress_counts_done_failed_and_resumed(bench_root: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # mvbench's 5 fixture items: 3 answered, object_shuffle/2 and /3 without a response (failed)
    answered = ("action_sequence/1", "action_sequence/2", "object_shuffle/1")
    _run(bench_root, tmp_path / "s.jsonl", ScriptedResponder({f"mvbench/{i}": "A" for i in answered}, default=None), True)
    last = _bars(capsys.readouterr().err)[-1]
    assert "5/5" in last and "failed=2" in last, last
    _run(bench_root, tmp_path / "s.jsonl", ScriptedResponder({}, default="B"), True)  # resume: the 2 failed retried
    bars = _bars(capsys.readouterr().err)
    assert " 3/5 " in bars[0], bars  # the 3 done earlier count from the start
    assert "5/5" in bars[-1] and "failed=0" in bars[-1], bars


def test_no_bar_when_stderr_is_no_terminal(bench_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(bench_root, tmp_path / "s.jsonl", ScriptedResponder({}, default="A"), None)
    assert _bars(capsys.readouterr().err) == []
