"""Run directories: the resolved config, the experiment source, package versions and the run's state.

`config.json` is the validated `Experiment` as JSON; `load_run(run_dir)` imports the recorded
source (the copy `experiment.py` of an experiment file, after the copies in `experiment_deps/` of the
other experiment files used to build the config, e.g. one loaded with `load_config` by the
experiment's function) and rebuilds an equal one, which is what `--resume` uses. A directory that
already holds a run is never written over: a new run there would mix its logs and checkpoints with
the old run's.

`run.json` records where the experiment (and each experiment it used: `deps`) came from, the
overrides, the folder the run started in, and the run's `status` (created, running, interrupted,
failed, finished) with a `history` of events (each start, with the process id and host, each stop
and failure with its step and error, and each `--update-code`). A killed run stays "running": its
recorded process no longer exists (`previous_process`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from evr1.errors import ConfigError
from evr1.experiment import Experiment, Override
from evr1.experiment_files import DEFAULT_VARIANT, ExperimentSource, experiment_file, project_root

CONFIG_FILE = "config.json"
RUN_FILE = "run.json"
VERSIONS_FILE = "versions.json"
SOURCE_FILE = "experiment.py"
DEPS_DIR = "experiment_deps"
FINAL_MODEL = "final_model"
CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer.json"  # written last: a checkpoint folder holding it is complete
SAMPLES_FILE = "samples.jsonl"
METRICS_FILE = "metrics.jsonl"  # one JSON row per logged step

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


def run_label(experiment: Experiment, variant: str = DEFAULT_VARIANT) -> str:
    """The name of a run of `variant`: the experiment's name, with `:<variant>` unless it is the default variant or
    the name already ends with it (an experiment that sets `name=` gives every variant that name)."""
    name = experiment.name
    if variant == DEFAULT_VARIANT or name.endswith((f":{variant}", f"-{variant}")):
        return name
    return f"{name}:{variant}"


def new_run_dir(experiment: Experiment, root: Path | None = None, variant: str = DEFAULT_VARIANT) -> Path:
    """`<run_root>/<label>/<timestamp>/` (`run_label`, `:` written `-`), made unique if two runs start in the same
    second."""
    name = run_label(experiment, variant).replace(":", "-")
    base = Path(root if root is not None else experiment.trainer.run_root) / name
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate, n = base / stamp, 1
    while candidate.exists():
        candidate, n = base / f"{stamp}-{n}", n + 1
    candidate.mkdir(parents=True)
    return candidate


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint (its `trainer.json` is written last)."""
    done = sorted((Path(run_dir) / CHECKPOINTS).glob(f"step_*/{TRAINER_STATE}"))
    return done[-1].parent if done else None


def check_unused(run_dir: Path) -> None:
    """Refuse a directory that already holds a run (its config, metrics, samples or checkpoints)."""
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
        "deps": _copy_deps(run_dir, source.deps) if source else [],
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


def discard_run_dir(run_dir: Path) -> None:
    """Remove what `write_run_dir` wrote (and `run.json`'s events), then the directory itself if nothing else is in
    it: for a run refused before it trained."""
    for name in (CONFIG_FILE, RUN_FILE, VERSIONS_FILE, SOURCE_FILE):
        (Path(run_dir) / name).unlink(missing_ok=True)
    shutil.rmtree(Path(run_dir) / DEPS_DIR, ignore_errors=True)
    if not any(Path(run_dir).iterdir()):
        Path(run_dir).rmdir()


def _copy_deps(run_dir: Path, deps: tuple[ExperimentSource, ...]) -> list[dict[str, str]]:
    """Copy the experiment files among `deps` into `experiment_deps/` (`NAME.py`; `NAME-2.py`, ... for a name met
    again); what `run.json` records of each dependency."""
    records = []
    for dep in deps:
        record = {"origin": dep.origin, "location": dep.location, "name": dep.name}
        if dep.origin == "file" and dep.file is not None and dep.file.is_file():
            copy, n = f"{DEPS_DIR}/{dep.file.stem}.py", 2
            while (run_dir / copy).exists():
                copy, n = f"{DEPS_DIR}/{dep.file.stem}-{n}.py", n + 1
            (run_dir / DEPS_DIR).mkdir(exist_ok=True)
            shutil.copyfile(dep.file, run_dir / copy)
            record["copy"] = copy
        records.append(record)
    return records


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
    _write_info(run_dir, info)


def record_info(run_dir: Path, **fields: Any) -> None:
    """Set top-level fields of `run.json` (e.g. `cluster`: where the latest start placed its workers)."""
    _write_info(run_dir, {**read_info(run_dir), **fields})


def _write_info(run_dir: Path, info: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=f"{RUN_FILE}.", suffix=".tmp")  # a name of its own: writers never share one
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(info, indent=2) + "\n")
    os.replace(tmp, Path(run_dir) / RUN_FILE)


def _start_time(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, from /proc), to tell it from a later process given
    the same id; None where /proc does not say."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def process_info(pid: int | None = None) -> dict[str, Any]:
    """The process (default: this one) as a "running" event records it: id, host and start time."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "host": socket.gethostname(), "pid_start": _start_time(pid)}


def _alive(event: dict[str, Any]) -> bool:
    pid = event["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return event.get("pid_start") is None or _start_time(pid) == event["pid_start"]


def previous_process(run_dir: Path) -> tuple[dict[str, Any], bool | None] | None:
    """For a run whose status is still "running": its last "running" event and whether that process is alive
    (None: it ran on another host, or no process id was recorded). None for a run in another state."""
    info = read_info(run_dir)
    if info.get("status") != "running":
        return None
    event = next((e for e in reversed(info.get("history", [])) if e["event"] == "running"), {})
    if event.get("pid") is None or event.get("host") != socket.gethostname():
        return event, None
    return event, event["pid"] != os.getpid() and _alive(event)


def last_failure(run_dir: Path) -> dict[str, Any] | None:
    """The `failed` event of a run whose status is failed, else None."""
    info = read_info(run_dir)
    if info.get("status") != "failed":
        return None
    return next((e for e in reversed(info.get("history", [])) if e["event"] == "failed"), None)


def current_file(location: str | None, name: str) -> Path | None:
    """An experiment file as it is now: the recorded `location`, else the file of experiment `name` found from the
    cwd (`experiments/<name>.py` of the project, or the one evr1 ships); None when neither exists."""
    if location and Path(location).is_file():
        return Path(location)
    return experiment_file(name, project_root()) if name else None


def original_source(run_dir: Path) -> Path | None:
    """The experiment file a run was configured from, as it is now (see `current_file`); None for an experiment from
    a module or entry point, or when the file no longer exists."""
    info = read_info(run_dir)
    if info.get("origin") != "file":
        return None
    return current_file(info.get("location"), str(info.get("experiment") or "").partition(":")[0])


def recorded_files(run_dir: Path) -> list[tuple[str, str, Path | None]]:
    """Each experiment file of the run as (its copy's name in the run directory, its recorded location, the file as
    it is now or None): `experiment.py` first, then the copies in `experiment_deps/`."""
    info = read_info(run_dir)
    files = [(SOURCE_FILE, str(info.get("location")), original_source(run_dir))] if info.get("origin") == "file" else []
    deps = [(d["copy"], d["location"], current_file(d["location"], d["name"])) for d in info.get("deps", []) if "copy" in d]
    return files + deps


def code_changed(run_dir: Path) -> dict[str, Path]:
    """The run's copies (by name) whose experiment file differs now, or that are missing, with that file."""
    changed = {}
    for name, _, current in recorded_files(run_dir):
        copy = Path(run_dir) / name
        if current is not None and (not copy.is_file() or current.read_bytes() != copy.read_bytes()):
            changed[name] = current
    return changed


def replace_code(run_dir: Path, current: Path, name: str = SOURCE_FILE) -> Path | None:
    """Make `current` the run's copy `name` of an experiment file; the old copy is kept as `<name>.N` (returned; N
    one more than the highest yet; None when there was no copy) and the change logged in `run.json`.
    `config.json` is not touched."""
    copy, backup = Path(run_dir) / name, None
    if copy.exists():
        taken = [int(p.name.rpartition(".")[2]) for p in copy.parent.glob(f"{copy.name}.*") if p.name.rpartition(".")[2].isdigit()]
        backup = copy.with_name(f"{copy.name}.{max(taken, default=0) + 1}")
        copy.replace(backup)
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(current, copy)
    log_event(run_dir, "code updated", source=str(current), copy=name, backup=backup.name if backup else None)
    return backup


def _sibling_folder(location: str | None, current: Path | None) -> Path | None:
    """Where the sibling modules of a run's copy are imported from: the current file's folder, else the recorded one."""
    if current is not None:
        return current.parent.resolve()
    return Path(location).parent if location and Path(location).parent.is_dir() else None


def _recorded_dep(run_dir: Path, record: dict[str, str], use: Mapping[str, Path]) -> ExperimentSource:
    if "copy" not in record:
        return ExperimentSource(record["name"], DEFAULT_VARIANT, record["origin"], record["location"], None)
    file = use.get(record["copy"], run_dir / record["copy"])
    current = current_file(record["location"], record["name"])
    if not file.is_file():
        why = f": --update-code restores it from {current}" if current else ", and that file no longer exists either"
        raise ConfigError(f"{run_dir / record['copy']}, the run's copy of the experiment file {record['location']}, is missing{why}")
    return ExperimentSource(record["name"], DEFAULT_VARIANT, "file", record["location"], file, _sibling_folder(record["location"], current))


def recorded_source(run_dir: Path, use: Mapping[str, Path] | None = None) -> ExperimentSource | None:
    """Where a run's experiment came from, as `run.json` records it; an experiment file is read from the run
    directory's copy (the source the run was configured with), or from `use[copy name]` when given; its sibling
    modules from the original file's folder. The same for the experiment files it used (`deps`, each aliased to
    its original file; a missing copy is refused). None when nothing was recorded."""
    run_dir, use = Path(run_dir).resolve(), use or {}
    info = read_info(run_dir)
    name, _, variant = str(info.get("experiment") or "").partition(":")
    variant = variant or DEFAULT_VARIANT
    deps = tuple(_recorded_dep(run_dir, r, use) for r in info.get("deps", []))
    if info.get("origin") == "file":
        file = use.get(SOURCE_FILE, run_dir / SOURCE_FILE)
        folder = _sibling_folder(info.get("location"), original_source(run_dir))
        return ExperimentSource(name, variant, "file", str(file), file, folder, deps) if file.is_file() else None
    if info.get("origin") in ("entry point", "module"):
        return ExperimentSource(name, variant, info["origin"], info["location"], None, deps=deps)
    return None


def load_run(run_dir: Path, use: Mapping[str, Path] | None = None) -> tuple[Experiment, ExperimentSource | None]:
    """The experiment recorded in a run directory and its source, imported first (so that components it
    registers, such as a reward, are known when the config is validated). `use`: experiment files to import in
    place of the run's copies, by copy name (to check them before `replace_code`)."""
    from evr1.experiment_files import import_source

    if not Path(run_dir).is_dir():
        raise ConfigError(f"run directory {run_dir} does not exist")
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{run_dir} is not a run directory: {CONFIG_FILE} is missing")
    source = recorded_source(run_dir, use)
    if source is not None:
        import_source(source)
    try:
        return Experiment.model_validate_json(path.read_text()), source
    except ValueError as exc:
        raise ConfigError(f"{path} does not hold a valid experiment:\n{exc}") from None


def load_experiment(run_dir: Path) -> Experiment:
    """The experiment recorded in a run directory."""
    return load_run(run_dir)[0]


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """All logged rows of a run's `metrics.jsonl`, in order (none when it has none yet)."""
    path = Path(run_dir) / METRICS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def finished(run_dir: Path, steps: int) -> bool:
    """Whether the run in `run_dir` trained all `steps` steps and exported its final model."""
    run_dir = Path(run_dir)
    if not (run_dir / FINAL_MODEL).is_dir():
        return False
    rows = read_metrics(run_dir)
    return bool(rows) and rows[-1]["step"] == steps


def resume_message(run_dir: Path, save_every: int) -> str:
    """Where `evr1 run --resume` restarts the run in `run_dir`."""

    folder = latest_checkpoint(Path(run_dir))
    if folder is not None:
        return f"resuming from checkpoint {folder.name}"
    why = "save_every=0" if not save_every else f"none saved yet, save_every={save_every}"
    return f"no checkpoint ({why}): starting again from step 0"


def stopped_step(run_dir: Path) -> int:
    """The step a run stopped in: the one after its last logged step (0: before step 1 was logged)."""
    rows = read_metrics(Path(run_dir))
    return rows[-1]["step"] + 1 if rows else 0


def failed_message(run_dir: Path, step: int, code: Path | None = None) -> str:
    """What to tell the user when a run fails during `step`; `code`: the experiment file the error came
    from (its fix reaches a resume through `--update-code`)."""

    folder = latest_checkpoint(Path(run_dir))
    start = f"from {folder.name}" if folder is not None else "from step 0: no checkpoint was saved"
    where = f"at step {step}" if step else "before step 1"
    if code is None:
        return f"the run failed {where}; after fixing the cause, continue with `evr1 run --resume {run_dir}` ({start})"
    copies = {(Path(run_dir) / name).resolve(): current for name, _, current in recorded_files(run_dir)}
    fix = copies.get(code.resolve()) or code  # a run's copy is fixed in its experiment file
    return (f"the run failed {where} in the experiment's code ({code}); after fixing {fix}, continue with"
            f" `evr1 run --resume {run_dir} --update-code` ({start})")


def interrupted_message(run_dir: Path, step: int) -> str:
    """What to tell the user when a run is stopped with Ctrl-C during `step`."""

    folder = latest_checkpoint(Path(run_dir))
    if folder is None:
        return f"interrupted at step {step}; no checkpoint was saved: `evr1 run --resume {run_dir}` starts again from step 0"
    return f"interrupted at step {step}; continue with `evr1 run --resume {run_dir}` (from {folder.name})"
