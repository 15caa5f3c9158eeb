"""The run's data: synthetic data made when missing, records read per split, media roots."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evr1.data.records import Record, read_records
from evr1.errors import ConfigError
from evr1.specs import DataSpec, SynthSpec


@dataclass(frozen=True)
class Split:
    """Records of one data file (or several sharing a root) and where their media live."""

    name: str
    records: tuple[Record, ...]
    root: Path


MANIFEST = "synth.json"


def _generator_digest() -> str:
    """A hash of the generator's source: data written by other code is regenerated, never reused."""
    import hashlib

    import evr1.data.synth_render as render
    import evr1.data.synth_tasks as tasks
    from evr1.data import synth

    digest = hashlib.sha256()
    for module in (synth, tasks, render):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def ensure_synthetic(spec: SynthSpec) -> None:
    """Write the synthetic dataset (and its blanked control) unless the same one is already there.

    `synth.json` records the spec and the generator's digest; any difference regenerates.
    """
    from evr1.data.synth import generate

    targets = [(Path(spec.out), False)] + ([(Path(f"{spec.out}-blank"), True)] if spec.blank_control else [])
    for out, blank in targets:
        manifest = json.dumps({"spec": spec.model_dump(mode="json"), "blank": blank, "generator": _generator_digest()})
        if (out / MANIFEST).is_file() and (out / MANIFEST).read_text() == manifest:
            continue
        generate(out, tasks=spec.tasks, n_train=spec.n_train, n_val=spec.n_val, seed=spec.seed, blank=blank, **_canvas(spec))
        (out / MANIFEST).write_text(manifest)


def _canvas(spec: SynthSpec) -> dict:
    from evr1.data.synth import QUICKSTART_CANVAS

    return {"canvas": QUICKSTART_CANVAS} if tuple(spec.tasks) == ("quickstart",) else {}


def _root(spec: DataSpec, files: tuple[str, ...], what: str) -> Path:
    if spec.data_root is not None:
        return Path(spec.data_root)
    parents = {Path(f).parent for f in files}
    if len(parents) > 1:
        raise ConfigError(f"data.{what} files live in different folders ({sorted(map(str, parents))}); set data.data_root")
    return parents.pop()


def train_split(spec: DataSpec) -> Split:
    if not spec.train:
        raise ConfigError("data.train is empty: name at least one JSON/JSONL file (or folder) of records")
    records = tuple(read_records(list(spec.train), spec.columns))
    if not records:
        raise ConfigError(f"data.train ({', '.join(spec.train)}) holds no records")
    return Split("train", records, _root(spec, spec.train, "train"))


def val_splits(spec: DataSpec) -> list[Split]:
    """One split per validation file, named after its folder and stem (e.g. `quickstart-blank/val`)."""
    splits = []
    for file in spec.val:
        path = Path(file)
        root = Path(spec.data_root) if spec.data_root is not None else path.parent
        splits.append(Split(f"{path.parent.name}/{path.stem}", tuple(read_records(file, spec.columns)), root))
    return splits
