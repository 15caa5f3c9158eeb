"""Parsing Qwen's `<tool_call>` blocks and running them: property tests (never an exception) and tables."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from evr1.data.live import MediaInfo
from evr1.data.loader import ProcessedMedia
from evr1.registry import TOOLS
from evr1.tools import ToolReply, check_arguments
from evr1.tools.calls import ToolCall, format_call, parse_calls, run_call, run_calls, tool_metrics

ERRORS = {"malformed_call", "unknown_tool", "bad_arguments", "tool_raised"}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
calls = st.builds(ToolCall, st.text(), st.dictionaries(st.text(), json_values, max_size=4))
prose = st.text().filter(lambda t: "<tool_call>" not in t)


class Echo:
    description = "Echo a text."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
    }

    def __call__(self, arguments: dict[str, Any], context: Any) -> ToolReply:
        return ToolReply(arguments["text"])


class Broken(Echo):
    def __call__(self, arguments: dict[str, Any], context: Any) -> ToolReply:
        raise ZeroDivisionError("division by zero")


OFFERED = {"echo": Echo(), "broken": Broken(), "seek": TOOLS["seek"], "zoom": TOOLS["zoom"]}


@given(st.lists(calls, max_size=3), prose, prose)
def test_formatted_calls_parse_back(parsed: list[ToolCall], before: str, after: str) -> None:
    text = before + "".join(format_call(c) + after for c in parsed)
    assert parse_calls(text) == parsed


@given(st.text() | st.builds(lambda a, b: a + "<tool_call>" + b, st.text(), st.text()))
def test_any_text_gets_replies_never_an_exception(text: str) -> None:
    replies = run_calls(text, OFFERED, None)
    assert (len(replies) > 0) == ("<tool_call>" in text) and len(replies) <= text.count("<tool_call>")
    assert all(isinstance(r, ToolReply) and r.error in ERRORS | {None} for r in replies)


@given(st.text().filter(lambda b: "</tool_call>" not in b))
def test_a_block_that_is_not_a_call_object_is_malformed(body: str) -> None:
    try:
        value = json.loads(body)
        is_call = isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(value.get("arguments", {}), dict)
    except ValueError:
        is_call = False
    (item,) = parse_calls(f"<tool_call>{body}</tool_call>")
    assert isinstance(item, ToolCall) == is_call
    if not is_call:
        assert item.error == "malformed_call" and item.text.startswith("Error: ")


@given(st.dictionaries(st.sampled_from(["start_s", "end_s", "time_s", "box", "x"]), json_values, max_size=4))
def test_arguments_outside_the_schema_are_bad_arguments(arguments: dict) -> None:
    fits = set(arguments) == {"start_s", "end_s"} and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in arguments.values()
    )
    reply = run_call(ToolCall("seek", arguments), OFFERED, None)
    # a call that fits reaches seek, which cannot run without a context: that is `tool_raised`, never an exception
    assert reply.error == ("tool_raised" if fits else "bad_arguments")


@pytest.mark.parametrize(
    ("text", "errors", "first_text"),
    [
        ('<tool_call>\n{"name": "echo", "arguments": {"text": "hi"}}\n</tool_call>', [None], "hi"),
        ('<tool_call>{"name": "look", "arguments": {}}</tool_call>', ["unknown_tool"],
         "Error: there is no tool 'look'; the tools are: echo, broken, seek, zoom"),
        ('<tool_call>{"name": "echo", "arguments": {"text": 3}}</tool_call>', ["bad_arguments"],
         "Error: echo: argument 'text' must be a string, got integer"),
        ('<tool_call>{"name": "zoom", "arguments": {"time_s": 1, "box": [1, 2, "3", 4]}}</tool_call>', ["bad_arguments"],
         "Error: zoom: argument 'box' item 2 must be a number, got string"),
        ('<tool_call>{"name": "zoom", "arguments": {"time_s": 1, "box": [1, 2]}}</tool_call>', ["bad_arguments"],
         "Error: zoom: argument 'box' must hold 4 items, got 2"),
        ('<tool_call>{"name": "seek", "arguments": {"start_s": 1}}</tool_call>', ["bad_arguments"],
         "Error: seek: missing argument(s) end_s"),
        ('<tool_call>{"name": "broken", "arguments": {"text": ""}}</tool_call>', ["tool_raised"],
         "Error: broken failed: ZeroDivisionError: division by zero"),
        ('<tool_call>{"name": "echo", "arguments": {"text": "a"}}', ["malformed_call"],
         'Error: <tool_call> is not closed by </tool_call>; write <tool_call>{"name": ..., "arguments": {...}}</tool_call>'),
        ("<tool_call>[1]</tool_call> then <tool_call>{'name': 1}</tool_call>", ["malformed_call", "malformed_call"],
         'Error: the call must be a JSON object, got array; write <tool_call>{"name": ..., "arguments": {...}}</tool_call>'),
        ("The answer is B.", [], None),
    ],
)
def test_replies_to_calls(text: str, errors: list, first_text: str | None) -> None:
    replies = run_calls(text, OFFERED, None)
    assert [r.error for r in replies] == errors
    if replies:
        assert replies[0].text == first_text


def _image(tokens: int) -> ProcessedMedia:
    grid = (1, 2, 2 * tokens)  # 4 patches a token
    return ProcessedMedia("image", "x.png", torch.zeros(4 * tokens, 1), torch.tensor([grid]), MediaInfo("image", grid, 28, 28),
                          cache_hit=False)


def test_metrics_count_calls_errors_and_visual_tokens() -> None:
    ok = ToolReply("frames", (_image(12), _image(6)))
    bad = ToolReply.failure("bad_box", "empty box")
    metrics = tool_metrics([[ok, bad], [], [bad, ToolReply.failure("unknown_tool", "no")]])
    assert metrics == {
        "tools/calls": 4.0, "tools/calls_per_sample": 4 / 3, "tools/errors": 3.0, "tools/visual_tokens": 18 / 3,
        "tools/errors/bad_box": 2.0, "tools/errors/unknown_tool": 1.0,
    }


@given(json_values)
def test_a_schema_beyond_the_checked_subset_never_raises(value) -> None:
    loose = {"type": "object", "properties": {"v": {"type": ["number", "null"]}, "w": {"type": "null"}}}
    assert check_arguments({"v": value, "w": value}, loose) is None
