"""Metrics sinks: one JSONL line per step (always), TensorBoard (when installed), W&B (opt-in)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

METRICS_FILE = "metrics.jsonl"


def _clean(value: Any) -> Any:
    """JSON-safe scalars: NaN/Inf become strings so the file stays valid JSON."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class MetricsLogger:
    """Writes `metrics.jsonl` in the run directory and mirrors scalars to TensorBoard/W&B.

    Appending is safe across resumes: lines for steps at or after the resume step are dropped
    first, so a resumed run's file equals an uninterrupted run's.
    """

    def __init__(self, run_dir: Path, *, tensorboard: bool = True, wandb_project: str | None = None) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self._tb = None
        self._wandb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard is optional at run time
                SummaryWriter = None  # noqa: N806
            if SummaryWriter is not None:
                self._tb = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))
        if wandb_project is not None:
            import wandb

            self._wandb = wandb.init(project=wandb_project, dir=str(run_dir), resume="allow")

    def truncate_from(self, step: int) -> None:
        """Forget logged steps >= `step` (used when resuming from a checkpoint taken at `step`)."""
        if not self.path.exists():
            return
        kept = [line for line in self.path.read_text().splitlines() if line and json.loads(line)["step"] < step]
        self.path.write_text("".join(line + "\n" for line in kept))

    def log(self, step: int, metrics: Mapping[str, Any]) -> None:
        row = {"step": step, "time": round(time.time(), 3), **{k: _clean(v) for k, v in metrics.items()}}
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        scalars = {k: v for k, v in row.items() if isinstance(v, (int, float)) and k not in ("step", "time")}
        if self._tb is not None:
            for key, value in scalars.items():
                self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(scalars, step=step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """All logged rows of a run, in order."""
    path = Path(run_dir) / METRICS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []
