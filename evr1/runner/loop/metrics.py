"""Metrics sinks: one JSONL line per step (always), TensorBoard (when installed), W&B (opt-in); and
the reward metrics of a training step, sampled and curated rows apart."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evr1.run_dir import METRICS_FILE


def _clean(value: Any) -> Any:
    """JSON-safe scalars: NaN/Inf become strings so the file stays valid JSON."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def truncate_jsonl(path: Path, step: int) -> None:
    """Drop the rows of a step log (JSONL rows with a `step`) at or after `step`."""
    if not path.exists():
        return
    kept = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] < step]
    path.write_text("".join(line + "\n" for line in kept))


class MetricsLogger:
    """Writes `metrics.jsonl` in the run directory and mirrors scalars to TensorBoard/W&B.

    `resume_step`: the run continues from there, so what was logged at or after it is forgotten
    first and a resumed run's logs equal an uninterrupted run's: its rows are dropped from the file;
    TensorBoard event files cannot be cut, so the writer records a restart (`purge_step`) and
    TensorBoard hides the older events of those steps.
    """

    def __init__(
        self, run_dir: Path, *, tensorboard: bool = True, wandb_project: str | None = None, resume_step: int | None = None
    ) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self._tb = None
        self._wandb = None
        if resume_step is not None:
            truncate_jsonl(self.path, resume_step)
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard is optional at run time
                SummaryWriter = None
            if SummaryWriter is not None:
                self._tb = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"), purge_step=resume_step)
        if wandb_project is not None:
            import wandb

            self._wandb = wandb.init(project=wandb_project, dir=str(run_dir), resume="allow")

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


def sampled_accuracy(metrics: dict[str, float]) -> float:
    """The mean of the sampled responses' per-type accuracies (`reward/<type>/accuracy`)."""
    values = [v for k, v in metrics.items() if k.startswith("reward/") and k.endswith("/accuracy") and k.count("/") == 2]
    return sum(values) / len(values) if values else 0.0


def reward_metrics(
    router: Any, inputs: Sequence[Any], outputs: Sequence[Any], offline: Sequence[bool],
    sampled: tuple[Sequence[Any], Sequence[Any]] | None = None,
) -> dict[str, float]:
    """A step's reward metrics. Of the sampled (online) responses: `reward/<type>/*`, `reward/errors`,
    `reward/timeouts` and `reward/online_score` (absent when every row is curated); `reward/score`: the
    mean over every row the advantages see; of curated (offline) rows, when there are some:
    `reward/offline_score`, `reward/offline_accuracy` (over rows their reward applies to) and
    `reward/offline_errors`. `sampled`: (inputs, outputs) of every sampled response, when a mixer
    replaced some of them (the online figures describe what the policy sampled, not what was kept).
    """
    if sampled is None:
        rows = [k for k, o in enumerate(offline) if not o]
        sampled = ([inputs[k] for k in rows], [outputs[k] for k in rows])
    metrics = router.metrics(*sampled)
    if "reward/score" in metrics:
        metrics["reward/online_score"] = metrics.pop("reward/score")
    if outputs:
        metrics["reward/score"] = sum(o.score for o in outputs) / len(outputs)
    curated = [outputs[k] for k, o in enumerate(offline) if o]
    if curated:
        metrics["reward/offline_score"] = sum(o.score for o in curated) / len(curated)
        scored = [o.components.get("accuracy", o.score) for o in curated if o.applicable and o.error is None]
        if scored:
            metrics["reward/offline_accuracy"] = sum(scored) / len(scored)
        metrics["reward/offline_errors"] = float(sum(o.error is not None for o in curated))
    return metrics
