"""Records whose media cannot be loaded during a run: dropped from their step, logged once, skipped after.

`RUN_DIR/data_failures.jsonl` holds one line per failed record, with the fields of the cache
build's failure report (`record`, `file`, `kind`, `reason`, `detail`, `split`) plus `step` and
`where` (the records file and line). The failed ids are part of the checkpoint, so a resumed run
skips what the interrupted one skipped. Too many failures stop the run (`too_many`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

FAILURES_FILE = "data_failures.jsonl"


def failure_limit(records: int, share: float = 0.01) -> int:
    """How many training records may fail before the run stops: `share` of them, at least 1 unless `share` is 0."""
    return 0 if share == 0 else max(1, int(round(records * share, 9)))  # 100 * 0.29 is 28.999...


class DataFailures:
    """The records of each split that failed so far, and the log of them.

    `sources` maps a split name to its record files (to name a failed record's file and line); `columns`
    is `DataSpec.columns` (the files' name for the id).
    """

    def __init__(self, run_dir: Path, sources: Mapping[str, Sequence[str | Path]], columns: Mapping[str, str] | None = None) -> None:
        self.path = Path(run_dir) / FAILURES_FILE
        self.sources, self.columns = dict(sources), dict(columns or {})
        self.failed: dict[str, set[str]] = {}
        self._where: dict[str, dict[str, str]] = {}

    def skipped(self, split: str, record_id: str) -> bool:
        return record_id in self.failed.get(split, ())

    def count(self, split: str) -> int:
        return len(self.failed.get(split, ()))

    def add(self, step: int, split: str, failures: Iterable[Any]) -> None:
        """Log `failures` (`MediaFailure`s of `split` found at `step`) and skip their records from now on."""
        rows = []
        for failure in failures:
            if self.skipped(split, failure.record):
                continue
            self.failed.setdefault(split, set()).add(failure.record)
            rows.append({"step": step, "split": split, **failure.to_json(), "where": self.where(split, failure.record)})
        if rows:
            with self.path.open("a", encoding="utf-8") as f:
                f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)

    def where(self, split: str, record_id: str) -> str | None:
        """`file:line` of a record of `split` (the record files are read once, on the first failure)."""
        if split not in self._where:
            from evr1.data.records import iter_json_objects

            found: dict[str, str] = {}
            for item in iter_json_objects(list(self.sources.get(split, ())), self.columns):
                rid = item.value.get("id") if isinstance(item.value, dict) else None
                if rid is not None:
                    found.setdefault(str(rid), f"{item.file}:{item.line}")
            self._where[split] = found
        return self._where[split].get(record_id)

    def too_many(self, step: int, kept: int, sampled: int, records: int, share: float = 0.01) -> str | None:
        """Why the run must stop after this step's training batch lost `sampled - kept` records (None: it goes on)."""
        failed, limit = self.count("train"), failure_limit(records, share)
        if kept == 0:
            why = f"none of the step's {sampled} records has media that can be loaded"
        elif failed > limit:
            why = f"{failed} of the {records} training records have media that cannot be loaded (at most {limit} may: data.max_failed_records={share})"
        else:
            return None
        return (f"step {step}: {why}; every failed record, its file and line, media file and reason are in {self.path}."
                " Fix or remove them: `evr1 data check` finds missing and unreadable media.")

    def state_dict(self) -> dict[str, list[str]]:
        return {split: sorted(ids) for split, ids in sorted(self.failed.items())}

    def load_state_dict(self, state: Mapping[str, Sequence[str]]) -> None:
        self.failed = {split: set(ids) for split, ids in state.items()}
