"""Scoring a JSONL (or JSON) file of (response, record) pairs.

Each line is `{"response": "...", "record": {...}}` or a record with a `response` (or a
`responses` list) field beside its own fields; an optional `sample_id` names the sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evr1.data.records import RecordError, iter_json_objects, validate_record
from evr1.rewards.contract import RewardInput, RewardOutput
from evr1.rewards.router import RewardRouter
from evr1.specs import RewardSpec

_PAIR_KEYS = ("response", "responses", "record", "sample_id")


@dataclass(frozen=True)
class ScoredFile:
    inputs: list[RewardInput]
    outputs: list[RewardOutput]
    metrics: dict[str, float]
    routes: dict[str, str]


def _responses(value: dict[str, Any], file: Path, line: int) -> list[str]:
    if "responses" in value:
        responses = value["responses"]
        if not isinstance(responses, list) or not all(isinstance(r, str) for r in responses):
            raise RecordError(file, line, "responses", "must be a list of strings")
        return responses
    if not isinstance(value.get("response"), str):
        raise RecordError(file, line, "response", "missing (each line needs a 'response' string or a 'responses' list)")
    return [value["response"]]


def read_pairs(path: str | Path) -> list[RewardInput]:
    """The reward inputs of a file; raises RecordError naming file, line and field."""
    inputs: list[RewardInput] = []
    for item in iter_json_objects(path):
        if isinstance(item.value, RecordError):
            raise item.value
        if not isinstance(item.value, dict):
            raise RecordError(item.file, item.line, None, f"expected a JSON object, got {type(item.value).__name__}")
        value = item.value
        body = value["record"] if "record" in value else {k: v for k, v in value.items() if k not in _PAIR_KEYS}
        record = validate_record(body, item.file, item.line)
        if isinstance(record, list):
            raise record[0]
        responses = _responses(value, item.file, item.line)
        base = str(value.get("sample_id", record.id))
        for k, response in enumerate(responses):
            sample_id = base if len(responses) == 1 else f"{base}#{k}"
            inputs.append(RewardInput.from_record(record, response, sample_id=sample_id))
    return inputs


def score_file(path: str | Path, spec: RewardSpec | None = None) -> ScoredFile:
    """Score every (response, record) pair of a file with the router built from `spec`."""
    router = RewardRouter(spec)
    inputs = read_pairs(path)
    outputs = router.score(inputs)
    routes = {t.value: router.route(t) for t in {inp.problem_type for inp in inputs}}
    return ScoredFile(inputs, outputs, router.metrics(inputs, outputs), routes)
