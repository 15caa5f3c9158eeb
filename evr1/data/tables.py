"""Records from tables: Parquet files and Hugging Face `datasets` folders (`Dataset.save_to_disk`).

Each row is one record, located as `FILE:ROW` (rows count from 1, as JSONL lines do), so every check
and error of the JSONL readers names it the same way. Columns that are not record fields are ignored
(datasets carry extras such as a source or a difficulty); `DataSpec.columns` maps record fields to
other column names. Arrow pads the structs of a `media` column with nulls (`start`/`end` of an
image): null entries are dropped. Media paths resolve from `data_root`, else from the folder holding
the file (for a saved dataset, the folder holding its folder), as for JSONL. Only local data is read: a hub dataset is downloaded and saved with
`datasets` beforehand (`HF_DATASETS_OFFLINE` is set before `datasets` is imported).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evr1.errors import Evr1Error

TABLE_SUFFIXES = (".parquet",)
DATASET_FILES = ("state.json", "dataset_info.json")  # what `Dataset.save_to_disk` writes beside its arrow files


def is_dataset_dir(path: Path) -> bool:
    return path.is_dir() and all((path / name).is_file() for name in DATASET_FILES)


def is_table(path: Path) -> bool:
    """A Parquet file or a saved `datasets` folder."""
    return path.suffix in TABLE_SUFFIXES and path.is_file() or is_dataset_dir(path)


def check_dataset_dict(path: Path) -> None:
    """Refuse a `DatasetDict.save_to_disk` folder, naming its splits (each is a dataset folder of its own)."""
    if (path / "dataset_dict.json").is_file():
        splits = sorted(p.name for p in path.iterdir() if is_dataset_dir(p))
        raise Evr1Error(f"{path}: a saved DatasetDict; name one of its splits: {', '.join(str(path / s) for s in splits)}")


def table_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, row as a dict) of a Parquet file or a saved dataset, null media entries dropped."""
    for number, row in enumerate(_rows(path), start=1):
        if isinstance(row.get("media"), list):
            row["media"] = [{k: v for k, v in m.items() if v is not None} if isinstance(m, dict) else m for m in row["media"]]
        yield number, row


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    if path.is_dir():
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        try:
            from datasets import load_from_disk
        except ImportError:
            raise Evr1Error(f"{path}: reading a saved dataset needs the `datasets` package (pip install 'evr1[eval]')") from None
        try:
            yield from load_from_disk(str(path))
        except (OSError, ValueError) as exc:
            raise Evr1Error(f"{path}: cannot read this saved dataset ({exc})") from None
        return
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise Evr1Error(f"{path}: reading Parquet needs the `pyarrow` package (pip install 'evr1[eval]')") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise Evr1Error(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    yield from table.to_pylist()
