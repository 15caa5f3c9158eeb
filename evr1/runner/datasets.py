"""The run's data: synthetic data made when missing, records read per split, media roots."""

from __future__ import annotations

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


def ensure_synthetic(spec: SynthSpec) -> None:
    """Write the synthetic dataset (and its blanked control) unless it is already there."""
    from evr1.data.synth import generate

    targets = [(Path(spec.out), False)] + ([(Path(f"{spec.out}-blank"), True)] if spec.blank_control else [])
    for out, blank in targets:
        if (out / "train.jsonl").is_file() and (out / "val.jsonl").is_file():
            continue
        generate(out, tasks=spec.tasks, n_train=spec.n_train, n_val=spec.n_val, seed=spec.seed, blank=blank, **_canvas(spec))


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
    records = tuple(read_records(list(spec.train)))
    if not records:
        raise ConfigError(f"data.train ({', '.join(spec.train)}) holds no records")
    return Split("train", records, _root(spec, spec.train, "train"))


def val_splits(spec: DataSpec) -> list[Split]:
    """One split per validation file, named after its folder and stem (e.g. `quickstart-blank/val`)."""
    splits = []
    for file in spec.val:
        path = Path(file)
        root = Path(spec.data_root) if spec.data_root is not None else path.parent
        splits.append(Split(f"{path.parent.name}/{path.stem}", tuple(read_records(file)), root))
    return splits
