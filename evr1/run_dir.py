"""Run directories: the resolved config, the experiment source and package versions.

`config.json` is the validated `Experiment` as JSON; `load_experiment(run_dir)` rebuilds an
equal one, which is what `--resume` uses. A directory that already holds a run is never written
over: a new run there would mix its logs and checkpoints with the old run's.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path

from evr1.errors import ConfigError
from evr1.experiment import Experiment, Override
from evr1.experiment_files import ExperimentSource

CONFIG_FILE = "config.json"
RUN_FILE = "run.json"
VERSIONS_FILE = "versions.json"
SOURCE_FILE = "experiment.py"

TRACKED_PACKAGES = (
    "evr1", "torch", "torchvision", "transformers", "pydantic", "fiddle", "ray", "lmdb", "av",
    "math-verify", "numpy", "vllm", "flash-attn", "lmms-eval",
)  # fmt: skip


def package_versions() -> dict[str, str | None]:
    """Installed versions (None where absent), read from metadata without importing anything."""
    versions: dict[str, str | None] = {"python": platform.python_version(), "platform": platform.platform()}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git_commit(folder: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def new_run_dir(experiment: Experiment, root: Path | None = None) -> Path:
    """`<run_root>/<name>/<timestamp>/`, made unique if two runs start in the same second."""
    base = Path(root if root is not None else experiment.trainer.run_root) / experiment.name.replace(":", "-")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate, n = base / stamp, 1
    while candidate.exists():
        candidate, n = base / f"{stamp}-{n}", n + 1
    candidate.mkdir(parents=True)
    return candidate


def check_unused(run_dir: Path) -> None:
    """Refuse a directory that already holds a run (its config, metrics, samples or checkpoints)."""
    from evr1.runner.metrics import METRICS_FILE
    from evr1.runner.train import CHECKPOINTS, SAMPLES_FILE

    found = [name for name in (CONFIG_FILE, METRICS_FILE, SAMPLES_FILE, CHECKPOINTS) if (Path(run_dir) / name).exists()]
    if found:
        raise ConfigError(
            f"{run_dir} already holds a run ({', '.join(found)}): continue it with `evr1 run --resume {run_dir}`,"
            " or pass another --run-dir"
        )


def write_run_dir(run_dir: Path, experiment: Experiment, source: ExperimentSource | None, overrides: list[Override]) -> None:
    """Record everything needed to understand and reproduce the run, in a directory that holds no run yet."""
    check_unused(run_dir)
    (run_dir / CONFIG_FILE).write_text(experiment.model_dump_json(indent=2) + "\n")
    info = {
        "experiment": source.label if source else experiment.name,
        "origin": source.origin if source else "run dir",
        "location": source.location if source else None,
        "overrides": [f"{o.path}={o.raw}" for o in overrides],
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_commit": _git_commit(source.file.parent) if source and source.file else None,
    }
    (run_dir / RUN_FILE).write_text(json.dumps(info, indent=2) + "\n")
    (run_dir / VERSIONS_FILE).write_text(json.dumps(package_versions(), indent=2) + "\n")
    if source is not None and source.file is not None and source.file.is_file():
        shutil.copyfile(source.file, run_dir / SOURCE_FILE)


def load_experiment(run_dir: Path) -> Experiment:
    """The experiment recorded in a run directory."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run directory: {CONFIG_FILE} is missing")
    try:
        return Experiment.model_validate_json(path.read_text())
    except ValueError as exc:
        raise ConfigError(f"{path} does not hold a valid experiment:\n{exc}") from None
