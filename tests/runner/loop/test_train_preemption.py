"""A run preempted as a scheduler does it: SIGTERM at a known point (`holding`), the step in progress finishes,
a checkpoint holding the generation in flight is written, `run.json` says why, the exit status is 75, and
`--resume` repeats the uninterrupted run exactly."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from evr1.run_dir import read_metrics

from ..holding import held_at_draw, release_marker, wait_until_held
from .test_train import EVR1, ROOT, run, settings, stable

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def wait_for_line(proc: subprocess.Popen, log: Path, text: str, timeout_s: float = 300) -> None:
    """Return once `text` is in `log` (the run's stderr); fail if the run ends or `timeout_s` passes first."""
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text():
        assert proc.poll() is None, f"the run ended before printing {text!r}:\n" + log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"no {text!r} within {timeout_s:g} s"
        time.sleep(0.1)


def test_sigterm_stops_after_the_step_with_a_checkpoint_and_the_resume_is_exact(tmp_path: Path, model_cache: Path) -> None:
    """One step off-policy: step 3's generation is launched (the third draw of records) at the start of step 2, where
    the run is held and sent SIGTERM; step 2 ends, its checkpoint holds step 3's generation in flight."""
    common = settings(tmp_path, model_cache, **{"trainer.steps": "3", "trainer.val_every": "0",
                                                "trainer.max_staleness": "1"})
    whole = run("quickstart", "--run-dir", str(tmp_path / "whole"), *common)
    assert whole.returncode == 0, whole.stderr[-3000:]

    target, log = tmp_path / "stopped", tmp_path / "err.txt"
    experiment = held_at_draw(tmp_path / "held.py", "quickstart", target, draw=3)
    with log.open("w") as err:  # a file, not a pipe a chatty run could fill
        proc = subprocess.Popen([EVR1, "run", str(experiment), "--run-dir", str(target), *common], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=err)
        try:
            wait_until_held(proc, target, log=log)
            proc.send_signal(signal.SIGTERM)
            wait_for_line(proc, log, "SIGTERM: stopping at the end of this step")
            release_marker(target).touch()
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert proc.returncode == 75, text[-3000:]
    assert f"stopped on SIGTERM after step 2 with checkpoint step_000002; continue with `evr1 run --resume {target}`" in text
    assert "Traceback" not in text
    assert (target / "checkpoints" / "step_000002" / "in_flight.pt").is_file()
    assert not (target / "final_model").exists()
    info = json.loads((target / "run.json").read_text())
    assert info["status"] == "interrupted"
    assert {k: info["history"][-1].get(k) for k in ("event", "step", "signal", "checkpoint")} == {
        "event": "interrupted", "step": 2, "signal": "SIGTERM", "checkpoint": "step_000002"}
    assert [r["step"] for r in read_metrics(target)] == [1, 2]

    resumed = run("--resume", str(target))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from checkpoint step_000002" in resumed.stdout
    assert stable(read_metrics(target)) == stable(read_metrics(tmp_path / "whole"))
