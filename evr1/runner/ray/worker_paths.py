"""One storage rule for a run's workers: every path they use is absolute, and each node checks it sees them.

Relative paths mean the driver's current folder. A Ray worker runs where its node's `ray start`
ran, so the driver makes every path absolute before an actor gets the experiment. evr1 supports
shared storage only (the same path on every node: NFS, a cluster file system): each worker
checks at start that it sees the data, media roots, cache and experiment files and can write
the run directory, and the driver sees what it wrote there.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from evr1.experiment import Experiment
from evr1.experiment_files import ExperimentSource

PROBE_PREFIX = ".evr1_node_probe_"


def _absolute(path: str | None, base: Path) -> str | None:
    return None if path is None else str((base / Path(path).expanduser()).resolve())


def for_workers(exp: Experiment, base: Path | None = None) -> Experiment:
    """`exp` with its data, cache, curated-responses, evaluation and local-model paths absolute (from `base`)."""
    base = (base or Path.cwd()).resolve()
    data, ev, model = exp.data, exp.eval, exp.model
    data = data.model_copy(update={
        "train": tuple(_absolute(p, base) for p in data.train),
        "val": tuple(_absolute(p, base) for p in data.val),
        "data_root": _absolute(data.data_root, base),
        "cache": data.cache.model_copy(update={"path": _absolute(data.cache.path, base)}),
    })  # fmt: skip
    ev = ev.model_copy(update={
        "data_root": _absolute(ev.data_root, base),
        "cache": ev.cache.model_copy(update={"path": _absolute(ev.cache.path, base)}),
    })  # fmt: skip
    local_model = (base / model.name).exists() and not Path(model.name).is_absolute()
    model = model.model_copy(update={
        "name": _absolute(model.name, base) if local_model else model.name,
        "cache_dir": _absolute(model.cache_dir, base),
    })  # fmt: skip
    mixer = exp.mixer.model_copy(update={"file": _absolute(exp.mixer.file, base)})
    return exp.model_copy(update={"data": data, "eval": ev, "model": model, "mixer": mixer})


def absolute_source(source: ExperimentSource | None) -> ExperimentSource | None:
    """`source` (and its deps) with absolute file, folder and (for files) location."""
    if source is None:
        return None
    return dataclasses.replace(
        source,
        location=str(Path(source.location).resolve()) if source.origin == "file" else source.location,
        file=source.file.resolve() if source.file else None,
        folder=source.folder.resolve() if source.folder else None,
        deps=tuple(absolute_source(d) for d in source.deps),  # type: ignore[misc]
    )


def needed(exp: Experiment, roots: Iterable[Path], source: ExperimentSource | None) -> list[str]:
    """What every worker must see: record files, media roots, the cache, curated responses, experiment files."""
    paths = [*exp.data.train, *exp.data.val, *map(str, roots), exp.data.cache.path, exp.mixer.file]
    pending = [source] if source else []
    while pending:
        src = pending.pop()
        paths += [str(src.file)] if src.file else []
        pending += list(src.deps)
    local_model = Path(exp.model.name)
    paths += [str(local_model)] if local_model.is_absolute() else []
    return list(dict.fromkeys(p for p in paths if p))


def unseen(paths: Sequence[str], run_dir: str) -> tuple[list[str], str | None]:
    """On a worker: the paths it cannot see, and the probe file it wrote into `run_dir` (None if it could not)."""
    missing = [p for p in paths if not os.path.exists(p)]
    probe = Path(run_dir) / f"{PROBE_PREFIX}{uuid.uuid4().hex}"
    try:
        probe.write_text("evr1 node check\n")
    except OSError as exc:
        missing.append(f"{run_dir} (not writable: {exc.strerror})")
        return missing, None
    return missing, str(probe)


def refusal(problems: dict[str, tuple[list[str], str | None]], run_dir: Path) -> str | None:
    """One message for every (node, role) whose check failed, removing the probes; None when all passed."""
    lines = []
    for where, (missing, probe) in problems.items():
        if missing:
            lines.append(f"{where} cannot see {', '.join(missing)}")
        if probe is not None:
            if Path(probe).exists():
                Path(probe).unlink()
            else:
                lines.append(f"{where} wrote {probe}, which the driver does not see: {run_dir} is not shared storage")
    if not lines:
        return None
    return ("workers must see the run's files at the same paths as the driver (shared storage): "
            + "; ".join(lines))

