"""Run directories: the resolved config, the experiment source and package versions.

`config.json` is the validated `Experiment` as JSON; `load_run(run_dir)` imports the recorded
source (the copy `experiment.py` of an experiment file) and rebuilds an equal one, which is what
`--resume` uses. A directory that already holds a run is never written
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
from evr1.experiment_files import DEFAULT_VARIANT, ExperimentSource

CONFIG_FILE = "config.json"
RUN_FILE = "run.json"
VERSIONS_FILE = "versions.json"
SOURCE_FILE = "experiment.py"
FINAL_MODEL = "final_model"

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


def recorded_source(run_dir: Path) -> ExperimentSource | None:
    """Where a run's experiment came from, as `run.json` records it; an experiment file is read from the
    run directory's copy (the source the run was configured with). None when nothing was recorded."""
    run_dir = Path(run_dir).resolve()
    path = run_dir / RUN_FILE
    if not path.is_file():
        return None
    info = json.loads(path.read_text())
    name, _, variant = str(info.get("experiment") or "").partition(":")
    variant = variant or DEFAULT_VARIANT
    if info.get("origin") == "file":
        copy = run_dir / SOURCE_FILE
        return ExperimentSource(name, variant, "file", str(copy), copy) if copy.is_file() else None
    if info.get("origin") in ("entry point", "module"):
        return ExperimentSource(name, variant, info["origin"], info["location"], None)
    return None


def load_run(run_dir: Path) -> tuple[Experiment, ExperimentSource | None]:
    """The experiment recorded in a run directory and its source, imported first (so that components it
    registers, such as a reward, are known when the config is validated)."""
    from evr1.experiment_files import import_source

    if not Path(run_dir).is_dir():
        raise ConfigError(f"run directory {run_dir} does not exist")
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run directory: {CONFIG_FILE} is missing")
    source = recorded_source(run_dir)
    if source is not None:
        import_source(source)
    try:
        return Experiment.model_validate_json(path.read_text()), source
    except ValueError as exc:
        raise ConfigError(f"{path} does not hold a valid experiment:\n{exc}") from None


def load_experiment(run_dir: Path) -> Experiment:
    """The experiment recorded in a run directory."""
    return load_run(run_dir)[0]


def finished(run_dir: Path, steps: int) -> bool:
    """Whether the run in `run_dir` trained all `steps` steps and exported its final model."""
    from evr1.runner.metrics import read_metrics

    run_dir = Path(run_dir)
    if not (run_dir / FINAL_MODEL).is_dir():
        return False
    rows = read_metrics(run_dir)
    return bool(rows) and rows[-1]["step"] == steps


def resume_message(run_dir: Path, save_every: int) -> str:
    """Where `evr1 run --resume` restarts the run in `run_dir`."""
    from evr1.runner.train import latest_checkpoint

    folder = latest_checkpoint(Path(run_dir))
    if folder is not None:
        return f"resuming from checkpoint {folder.name}"
    why = "save_every=0" if not save_every else f"none saved yet, save_every={save_every}"
    return f"no checkpoint ({why}): starting again from step 0"


def interrupted_message(run_dir: Path, step: int) -> str:
    """What to tell the user when a run is stopped with Ctrl-C during `step`."""
    from evr1.runner.train import latest_checkpoint

    folder = latest_checkpoint(Path(run_dir))
    if folder is None:
        return f"interrupted at step {step}; no checkpoint was saved: `evr1 run --resume {run_dir}` starts again from step 0"
    return f"interrupted at step {step}; continue with `evr1 run --resume {run_dir}` (from {folder.name})"
