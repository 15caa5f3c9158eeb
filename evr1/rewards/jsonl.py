"""Reading a JSONL (or JSON) file of (response, record) pairs for scoring.

Each line is `{"response": "...", "record": {...}}` or a record with a `response` (or a
`responses` list) field beside its own fields, never both; an optional `sample_id` names the
sample (null or absent: the record's id; `#k` is added for the k-th of several responses). Two
lines that give the same sample id are a problem of the later one.
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
    first_at: dict[str, str] = {}  # sample id -> file:line of the line that gave it
    for item in iter_json_objects(path):
        value = item.value
        if isinstance(value, RecordError):
            problems.append(value)
            continue
        if not isinstance(value, dict):
            problems.append(RecordError(item.file, item.line, None, f"expected a JSON object, got {_json_type(value)}"))
            continue
        body = value["record"] if "record" in value else {k: v for k, v in value.items() if k not in _PAIR_KEYS}
        rid = body.get("id") if isinstance(body, dict) else None
        of = f" (record {rid!r})" if isinstance(rid, (str, int)) and not isinstance(rid, bool) else ""
        if isinstance(body, dict):
            record = validate_record(body, item.file, item.line)
        else:
            record = [RecordError(item.file, item.line, "record", f"must be an object (a record), got {_json_type(body)}")]
        found = _response_problems(value, item.file, item.line, of) + _sample_id_problems(value, item.file, item.line, of)
        if isinstance(record, list) or found:
            problems.extend((record if isinstance(record, list) else []) + found)
            continue
        responses = value["responses"] if "responses" in value else [value["response"]]
        given = value.get("sample_id")
        base = record.id if given is None else str(given)
        ids = [base] if len(responses) == 1 else [f"{base}#{k}" for k in range(len(responses))]
        taken = next((s for s in (base, *ids) if s in first_at), None)
        if taken is not None:
            problems.append(RecordError(
                item.file, item.line, "id" if given is None else "sample_id",
                f"duplicate sample id {taken!r} (first at {first_at[taken]}): give each line its own 'sample_id', or put"
                f" the responses to one record in one 'responses' list{of}",
            ))  # fmt: skip
            continue
        first_at.update(dict.fromkeys((base, *ids), f"{item.file}:{item.line}"))
        inputs.extend(RewardInput.from_record(record, r, sample_id=s) for r, s in zip(responses, ids))
    return inputs, problems


def _response_problems(value: dict[str, Any], file: Path, line: int, of: str) -> list[RecordError]:
    """What is wrong with a line's `response` / `responses` fields (empty when nothing)."""
    if "responses" in value and "response" in value:
        return [RecordError(file, line, None, f"has both 'response' and 'responses': give one string or one list{of}")]
    if "responses" in value:
        responses = value["responses"]
        if not isinstance(responses, list) or not responses:
            got = "an empty list" if isinstance(responses, list) else _json_type(responses)
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


def _sample_id_problems(value: dict[str, Any], file: Path, line: int, of: str) -> list[RecordError]:
    """A `sample_id` that is neither null, a non-empty string nor an integer."""
    given = value.get("sample_id")
    if given is None or (isinstance(given, int) and not isinstance(given, bool)) or (isinstance(given, str) and given):
        return []
    got = "an empty string" if given == "" else _json_type(given)
    return [RecordError(file, line, "sample_id", f"must be a non-empty string (or null: the record's id), got {got}{of}")]


def _json_type(value: Any) -> str:
    """What a JSON value is, in JSON's words: `5` is a number, `None` is null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({json.dumps(value)[:40]})"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)
