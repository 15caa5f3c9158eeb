"""report.md says when training rewards failed, from a run's metrics.jsonl alone."""

from __future__ import annotations

import json
from pathlib import Path

from evr1.run_dir import METRICS_FILE, read_metrics
from evr1.runner.loop.run_report import write_report


def _step(step: int, tg: int, num: int, mc: int, timeouts: int = 0) -> dict[str, float]:
    """One step's reward metrics: 2 temporal_grounding, 1 numerical, 1 multiple_choice samples; given errors."""
    return {
        "step": step, "reward/score": 0.1, "reward/errors": tg + num + mc, "reward/timeouts": timeouts,
        "reward/temporal_grounding/count": 2, "reward/temporal_grounding/errors": tg,
        "reward/numerical/count": 1, "reward/numerical/errors": num,
        "reward/multiple_choice/count": 1, "reward/multiple_choice/errors": mc, "reward/multiple_choice/accuracy": 0.4,
        "timing/step": 1.0,
    }  # fmt: skip


def _report(run_dir: Path, rows: list[dict[str, float]]) -> str:
    run_dir.mkdir()
    (run_dir / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return write_report(run_dir, read_metrics(run_dir), "exp").read_text()


def test_report_counts_reward_errors_by_type_and_points_at_data_check(tmp_path: Path) -> None:
    text = _report(tmp_path / "run", [_step(1, 2, 1, 0), _step(2, 2, 1, 0, timeouts=1)])
    # 6 of 8 samples failed over two steps: temporal_grounding 4 of 4, numerical 2 of 2, multiple_choice none
    assert "**Reward errors: 6 of 8 training rewards (75%) failed and scored 0, 1 of them timeouts**" in text
    assert "(numerical 2 of 2, temporal_grounding 4 of 4)." in text  # types in name order
    assert "multiple_choice 0" not in text
    assert "`evr1 data check`" in text
    assert text.index("Reward errors") < text.index("| metric |")


def test_report_without_errors_says_nothing_about_them(tmp_path: Path) -> None:
    text = _report(tmp_path / "run", [_step(1, 0, 0, 0)])
    assert "error" not in text.lower() and "| reward/score | 0.100 | 0.100 | 0.100 |" in text
