"""Run directories: the resolved config, the experiment source, package versions and the run's state.

`config.json` is the validated `Experiment` as JSON; `load_run(run_dir)` imports the recorded
source (the copy `experiment.py` of an experiment file) and rebuilds an equal one, which is what
`--resume` uses. A directory that already holds a run is never written
over: a new run there would mix its logs and checkpoints with the old run's.

`run.json` records where the experiment came from, the overrides, the folder the run started in,
and the run's `status` (created, running, interrupted, failed, finished; a killed run stays
"running") with a `history` of events (each start, stop and failure with its step and error, and
each `--update-code`).
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

from evr1.errors import ConfigError
from evr1.experiment import Experiment, Override
from evr1.experiment_files import DEFAULT_VARIANT, ExperimentSource, project_root

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
        "created": _now(),
        "cwd": str(Path.cwd()),
        "git_commit": _git_commit(source.file.parent) if source and source.file else None,
        "status": "created",
        "history": [],
    }
    (run_dir / RUN_FILE).write_text(json.dumps(info, indent=2) + "\n")
    (run_dir / VERSIONS_FILE).write_text(json.dumps(package_versions(), indent=2) + "\n")
    if source is not None and source.file is not None and source.file.is_file():
        shutil.copyfile(source.file, run_dir / SOURCE_FILE)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def read_info(run_dir: Path) -> dict[str, Any]:
    """The run's `run.json` ({} when there is none)."""
    path = Path(run_dir) / RUN_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def log_event(run_dir: Path, event: str, **details: Any) -> None:
    """Append `event` (with `details`) to the history in `run.json`; a state event (created, running,
    interrupted, failed, finished) also becomes the run's `status`."""
    info = read_info(run_dir)
    info.setdefault("history", []).append({"time": _now(), "event": event, **details})
    if event in ("created", "running", "interrupted", "failed", "finished"):
        info["status"] = event
    tmp = Path(run_dir) / f"{RUN_FILE}.tmp"
    tmp.write_text(json.dumps(info, indent=2) + "\n")
    tmp.replace(Path(run_dir) / RUN_FILE)


def last_failure(run_dir: Path) -> dict[str, Any] | None:
    """The `failed` event of a run whose status is failed, else None."""
    info = read_info(run_dir)
    if info.get("status") != "failed":
        return None
    return next((e for e in reversed(info.get("history", [])) if e["event"] == "failed"), None)


def original_source(run_dir: Path) -> Path | None:
    """The experiment file a run was configured from, as it is now: the recorded path, else
    `experiments/<name>.py` of the project found from the cwd; None for an experiment from a module or
    entry point, or when neither file exists."""
    info = read_info(run_dir)
    if info.get("origin") != "file":
        return None
    if info.get("location") and Path(info["location"]).is_file():
        return Path(info["location"])
    root, name = project_root(), str(info.get("experiment") or "").partition(":")[0]
    by_name = root / "experiments" / f"{name}.py" if root is not None and name else None
    return by_name if by_name is not None and by_name.is_file() else None


def code_changed(run_dir: Path) -> Path | None:
    """The original experiment file of the run when it differs from the run's copy, else None."""
    copy, current = Path(run_dir) / SOURCE_FILE, original_source(run_dir)
    if current is None or not copy.is_file() or current.read_bytes() == copy.read_bytes():
        return None
    return current


def replace_code(run_dir: Path, current: Path) -> Path:
    """Make `current` the run's copy of its experiment file; the old copy is kept as `experiment.py.N`
    (returned) and the change logged in `run.json`. `config.json` is not touched."""
    run_dir, n = Path(run_dir), 1
    while (run_dir / f"{SOURCE_FILE}.{n}").exists():
        n += 1
    backup = run_dir / f"{SOURCE_FILE}.{n}"
    (run_dir / SOURCE_FILE).replace(backup)
    shutil.copyfile(current, run_dir / SOURCE_FILE)
    log_event(run_dir, "code updated", source=str(current), backup=backup.name)
    return backup


def recorded_source(run_dir: Path) -> ExperimentSource | None:
    """Where a run's experiment came from, as `run.json` records it; an experiment file is read from the
    run directory's copy (the source the run was configured with), its sibling modules from the original
    file's folder. None when nothing was recorded."""
    run_dir = Path(run_dir).resolve()
    info = read_info(run_dir)
    name, _, variant = str(info.get("experiment") or "").partition(":")
    variant = variant or DEFAULT_VARIANT
    if info.get("origin") == "file":
        copy, original = run_dir / SOURCE_FILE, original_source(run_dir)
        folder = original.parent.resolve() if original is not None else None
        return ExperimentSource(name, variant, "file", str(copy), copy, folder) if copy.is_file() else None
    if info.get("origin") in ("entry point", "module"):
        return ExperimentSource(name, variant, info["origin"], info["location"], None)
    return None


def load_run(run_dir: Path, code: Path | None = None) -> tuple[Experiment, ExperimentSource | None]:
    """The experiment recorded in a run directory and its source, imported first (so that components it
    registers, such as a reward, are known when the config is validated). `code`: an experiment file to
    import in place of the run's copy (to check it before `replace_code`)."""
    from evr1.experiment_files import import_source

    if not Path(run_dir).is_dir():
        raise ConfigError(f"run directory {run_dir} does not exist")
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run directory: {CONFIG_FILE} is missing")
    source = recorded_source(run_dir)
    if source is not None:
        import_source(source if code is None or source.origin != "file" else replace(source, location=str(code), file=code))
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


def stopped_step(run_dir: Path) -> int:
    """The step a run stopped in: the one after its last logged step (0: before step 1 was logged)."""
    from evr1.runner.metrics import read_metrics

    rows = read_metrics(Path(run_dir))
    return rows[-1]["step"] + 1 if rows else 0


def failed_message(run_dir: Path, step: int, code: Path | None = None) -> str:
    """What to tell the user when a run fails during `step`; `code`: the experiment file the error came
    from (its fix reaches a resume through `--update-code`)."""
    from evr1.runner.train import latest_checkpoint

    folder = latest_checkpoint(Path(run_dir))
    start = f"from {folder.name}" if folder is not None else "from step 0: no checkpoint was saved"
    where = f"at step {step}" if step else "before step 1"
    if code is None:
        return f"the run failed {where}; after fixing the cause, continue with `evr1 run --resume {run_dir}` ({start})"
    fix = original_source(run_dir) or code
    return (f"the run failed {where} in the experiment's code ({code}); after fixing {fix}, continue with"
            f" `evr1 run --resume {run_dir} --update-code` ({start})")


def interrupted_message(run_dir: Path, step: int) -> str:
    """What to tell the user when a run is stopped with Ctrl-C during `step`."""
    from evr1.runner.train import latest_checkpoint

    folder = latest_checkpoint(Path(run_dir))
    if folder is None:
        return f"interrupted at step {step}; no checkpoint was saved: `evr1 run --resume {run_dir}` starts again from step 0"
    return f"interrupted at step {step}; continue with `evr1 run --resume {run_dir}` (from {folder.name})"
