"""Reading a JSONL (or JSON) file of (response, record) pairs for scoring.

Each line is `{"response": "...", "record": {...}}` or a record with a `response` (or a
`responses` list) field beside its own fields; an optional `sample_id` names the sample.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evr1.data.records import RecordError, iter_json_objects, validate_record
from evr1.rewards.contract import RewardInput

_PAIR_KEYS = ("response", "responses", "record", "sample_id")


def read_pairs(path: str | Path) -> tuple[list[RewardInput], list[RecordError]]:
    """The reward inputs of every readable line of `path`, and a `RecordError` for every problem of
    every other line (file:line, field, record id), so that one bad line hides neither the others'
    scores nor the other bad lines."""
    inputs: list[RewardInput] = []
    problems: list[RecordError] = []
    for item in iter_json_objects(path):
        value = item.value
        if isinstance(value, RecordError):
            problems.append(value)
            continue
        if not isinstance(value, dict):
            problems.append(RecordError(item.file, item.line, None, f"expected a JSON object, got {type(value).__name__}"))
            continue
        body = value["record"] if "record" in value else {k: v for k, v in value.items() if k not in _PAIR_KEYS}
        record = validate_record(body, item.file, item.line)
        rid = body.get("id") if isinstance(body, dict) else None
        found = _response_problems(value, item.file, item.line, rid)
        if isinstance(record, list) or found:
            problems.extend((record if isinstance(record, list) else []) + found)
            continue
        responses = value["responses"] if "responses" in value else [value["response"]]
        base = str(value.get("sample_id", record.id))
        for k, response in enumerate(responses):
            sample_id = base if len(responses) == 1 else f"{base}#{k}"
            inputs.append(RewardInput.from_record(record, response, sample_id=sample_id))
    return inputs, problems



def _response_problems(value: dict[str, Any], file: Path, line: int, rid: Any) -> list[RecordError]:
    """What is wrong with a line's `response` / `responses` fields (empty when nothing)."""
    of = f" (record {rid!r})" if isinstance(rid, (str, int)) and not isinstance(rid, bool) else ""
    if "responses" in value:
        responses = value["responses"]
        if not isinstance(responses, list) or not responses:
            got = "an empty list" if isinstance(responses, list) else f"a {type(responses).__name__}"
            return [RecordError(file, line, "responses", f"must be a non-empty list of strings, got {got}{of}")]
        return [
            RecordError(file, line, f"responses[{i}]", f"must be a string, got {_json_type(r)}{of}")
            for i, r in enumerate(responses)
            if not isinstance(r, str)
        ]
    if "response" not in value:
        return [RecordError(file, line, "response", f"missing: each line needs a 'response' string or a 'responses' list{of}")]
    if not isinstance(value["response"], str):
        return [RecordError(file, line, "response", f"must be a string, got {_json_type(value['response'])}{of}")]
    return []


def _json_type(value: Any) -> str:
    """What a JSON value is, in JSON's words: `5` is a number, `None` is null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)
