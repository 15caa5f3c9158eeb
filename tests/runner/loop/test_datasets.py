"""Synthetic data for a run: made once, remade when its spec changes, never silently stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.errors import ConfigError
from evr1.runner.loop.datasets import MANIFEST, ensure_synthetic, train_split, val_splits
from evr1.specs import DataSpec, SynthSpec


def test_made_once_then_reused(tmp_path: Path) -> None:
    spec = SynthSpec(out=str(tmp_path / "q"), n_train=8, n_val=4)
    ensure_synthetic(spec)
    train = tmp_path / "q" / "train.jsonl"
    blank = tmp_path / "q-blank" / "val.jsonl"
    assert len(train.read_text().splitlines()) == 8 and len(blank.read_text().splitlines()) == 4
    stamp = train.stat().st_mtime_ns
    ensure_synthetic(spec)
    assert train.stat().st_mtime_ns == stamp


def test_a_changed_spec_regenerates(tmp_path: Path) -> None:
    ensure_synthetic(SynthSpec(out=str(tmp_path / "q"), n_train=8, n_val=4, blank_control=False))
    ensure_synthetic(SynthSpec(out=str(tmp_path / "q"), n_train=12, n_val=4, blank_control=False))
    assert len((tmp_path / "q" / "train.jsonl").read_text().splitlines()) == 12
    assert '"n_train": 12' in (tmp_path / "q" / MANIFEST).read_text()


def test_data_written_by_other_code_is_regenerated(tmp_path: Path) -> None:
    spec = SynthSpec(out=str(tmp_path / "q"), n_train=8, n_val=4, blank_control=False)
    ensure_synthetic(spec)
    manifest = tmp_path / "q" / MANIFEST
    manifest.write_text(manifest.read_text().replace('"generator": "', '"generator": "old'))
    (tmp_path / "q" / "train.jsonl").write_text("")
    ensure_synthetic(spec)
    assert len((tmp_path / "q" / "train.jsonl").read_text().splitlines()) == 8


def test_splits_and_roots(tmp_path: Path) -> None:
    ensure_synthetic(SynthSpec(out=str(tmp_path / "q"), n_train=8, n_val=4))
    spec = DataSpec(train=(f"{tmp_path}/q/train.jsonl",), val=(f"{tmp_path}/q/val.jsonl", f"{tmp_path}/q-blank/val.jsonl"))
    train = train_split(spec)
    assert (len(train.records), train.root) == (8, tmp_path / "q")
    assert [(v.name, v.root) for v in val_splits(spec)] == [("q/val", tmp_path / "q"), ("q-blank/val", tmp_path / "q-blank")]


@pytest.mark.parametrize(
    ("train", "message"),
    [((), "data.train is empty"), (("a/x.jsonl", "b/y.jsonl"), "live in different folders")],
)
def test_split_errors(tmp_path: Path, train: tuple[str, ...], message: str) -> None:
    for i, name in enumerate(train):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'{{"id": "r{i}", "problem": "q", "problem_type": "boolean", "answer": "yes"}}\n')
    with pytest.raises(ConfigError, match=message):
        train_split(DataSpec(train=tuple(str(tmp_path / t) for t in train)))
