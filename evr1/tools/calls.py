"""Tool calls in Qwen's format, parsed from the policy's text and run without ever raising.

The policy writes a call as its chat template teaches it (Qwen2.5-VL, Qwen3-VL, Qwen3.5):

    <tool_call>
    {"name": "seek", "arguments": {"start_s": 1.0, "end_s": 3.0}}
    </tool_call>

`parse_calls(text)` returns one item per `<tool_call>` block, in order: a `ToolCall`, or a `ToolReply` with an
error when the block is not a call (`malformed_call`: unclosed, not JSON, not an object with a string `name` and
an object `arguments`). `run_call` answers a call: `unknown_tool` (not offered), `bad_arguments` (not fitting the
tool's schema), `tool_raised` (the tool raised, which tools should not), or the tool's own reply. `tool_metrics`
counts calls, errors by kind and visual tokens added.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evr1.tools.base import ToolContext, ToolReply, check_arguments, json_type

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(rf"{re.escape(OPEN)}(.*?)(?:{re.escape(CLOSE)}|\Z)", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    """One parsed call: the tool's name and its arguments (a JSON object)."""

    name: str
    arguments: dict[str, Any]


def format_call(call: ToolCall) -> str:
    """The call as Qwen's chat templates write an assistant's tool call (a `</` inside a string is written `<\\/`,
    JSON's own escape, so no text in the call can close the block early)."""
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False).replace("</", "<\\/")
    return f"{OPEN}\n{body}\n{CLOSE}"


def parse_calls(text: str) -> list[ToolCall | ToolReply]:
    """Every `<tool_call>` block of `text`, in order, as a call or as an error reply saying what is wrong."""
    found: list[ToolCall | ToolReply] = []
    for match in _BLOCK.finditer(text):
        closed = match.group(0).endswith(CLOSE)
        found.append(_parse_block(match.group(1)) if closed else _malformed(f"{OPEN} is not closed by {CLOSE}"))
    return found


def _parse_block(body: str) -> ToolCall | ToolReply:
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return _malformed(f"the call is not valid JSON ({exc})")
    if not isinstance(value, dict):
        return _malformed(f"the call must be a JSON object, got {json_type(value)}")
    name, arguments = value.get("name"), value.get("arguments", {})
    if not isinstance(name, str):
        return _malformed(f'the call needs a string "name", got {json_type(name)}')
    if not isinstance(arguments, dict):
        return _malformed(f'"arguments" must be a JSON object, got {json_type(arguments)}')
    return ToolCall(name, arguments)


def _malformed(why: str) -> ToolReply:
    return ToolReply.failure("malformed_call", f'{why}; write {OPEN}{{"name": ..., "arguments": {{...}}}}{CLOSE}')


def run_call(item: ToolCall | ToolReply, tools: Mapping[str, Any], context: ToolContext | None) -> ToolReply:
    """The reply to one parsed item: an error reply passes through; a call to a tool of `tools` (the ones offered,
    by name) is checked against its schema and run. Never raises for anything the policy wrote or a tool did."""
    if isinstance(item, ToolReply):
        return item
    tool = tools.get(item.name)
    if tool is None:
        offered = ", ".join(tools) or "none"
        return ToolReply.failure("unknown_tool", f"there is no tool {item.name!r}; the tools are: {offered}")
    why = check_arguments(item.arguments, tool.parameters)
    if why is not None:
        return ToolReply.failure("bad_arguments", f"{item.name}: {why}")
    try:
        return tool(item.arguments, context)
    except Exception as exc:  # noqa: BLE001 - a tool's bug must not stop the batch; it is counted and said
        return ToolReply.failure("tool_raised", f"{item.name} failed: {type(exc).__name__}: {exc}")


def run_calls(text: str, tools: Mapping[str, Any], context: ToolContext | None) -> list[ToolReply]:
    """The replies to every call in `text`, in order."""
    return [run_call(item, tools, context) for item in parse_calls(text)]


def tool_metrics(replies: Iterable[Sequence[ToolReply]]) -> dict[str, float]:
    """Over samples' replies: `tools/calls`, `tools/calls_per_sample`, `tools/errors`, `tools/errors/<kind>` and
    `tools/visual_tokens` (added by replies, per sample)."""
    per_sample = [list(r) for r in replies]
    flat = [r for sample in per_sample for r in sample]
    n = max(len(per_sample), 1)
    errors = Counter(r.error for r in flat if r.error is not None)
    metrics = {
        "tools/calls": float(len(flat)),
        "tools/calls_per_sample": len(flat) / n,
        "tools/errors": float(sum(errors.values())),
        "tools/visual_tokens": sum(r.visual_tokens for r in flat) / n,
    }
    metrics.update({f"tools/errors/{kind}": float(count) for kind, count in sorted(errors.items())})
    return metrics
