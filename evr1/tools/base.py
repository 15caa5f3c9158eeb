"""The tool contract: what a tool shows the model, what it is called with, and what it returns.

A tool is an object registered in `evr1.registry.TOOLS` (by `TOOLS.register("acme/name", obj)` or the entry-point
group `evr1.tools`) with

- `description: str` and `parameters: dict`: the function's description and the JSON schema of its arguments, as
  shown to the model through its chat template (`schema_of`);
- `__call__(arguments, context) -> ToolReply`: `arguments` already parsed and checked against `parameters`
  (`check_arguments`), `context` the sample's media (`ToolContext`).

A tool answers a bad request (a span outside the video, an empty box) with `ToolReply.failure(...)`, never by
raising: the reply's text goes back to the model, and the rollout counts the error. An exception a tool raises
anyway is caught by `evr1.tools.calls.run_call` and becomes an error reply of kind `tool_raised`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from evr1.data.loader import ProcessedMedia
    from evr1.data.records import MediaRef
    from evr1.specs import ToolsSpec
    from evr1.tools.media import ToolMedia


@dataclass(frozen=True)
class ToolReply:
    """A tool's answer: `text` for the model, `media` it shows next (frames or images, model-ready), and `error`,
    a short stable code (`bad_arguments`, `out_of_range`, ...) when the call failed (then `text` says why)."""

    text: str
    media: tuple[ProcessedMedia, ...] = ()
    error: str | None = None

    @classmethod
    def failure(cls, error: str, text: str) -> ToolReply:
        return cls(f"Error: {text}", (), error)

    @property
    def visual_tokens(self) -> int:
        """Visual tokens the reply's media take in the prompt (merged patches)."""
        return sum(int(m.grid_thw.prod()) // _MERGE_UNIT for m in self.media)


_MERGE_UNIT = 4  # merge_size ** 2: patches per visual token in every Qwen-VL family


@dataclass(frozen=True)
class ToolContext:
    """What a tool may use about one sample: `media` (loaders for the data's specs), `video` (the sample's video as
    the record names it) and `shown` (that video as the prompt shows it: its frame times, size and clock)."""

    media: ToolMedia
    video: MediaRef
    shown: ProcessedMedia
    record_id: str = "?"

    @property
    def spec(self) -> ToolsSpec:
        return self.media.spec

    def time_range(self) -> tuple[float, float]:
        """The video's first and last second on the prompt's clock (what the model reads times on)."""
        info = self.shown.info
        start = self.shown.clock_offset
        return start, start + (info.total_frames or 0) / (info.video_fps or 1.0)

    def prompt_seconds(self, source: float) -> float:
        """Seconds of the source video as a time on the prompt's clock."""
        info = self.shown.info
        return source + self.shown.clock_offset - info.first_frame / (info.video_fps or 1.0)

    def source_seconds(self, t: float) -> float:
        """A time on the prompt's clock as seconds of the source video."""
        info = self.shown.info
        return t - self.shown.clock_offset + info.first_frame / (info.video_fps or 1.0)


class Tool(Protocol):
    """What a tool is (any object with these three members; see the module docstring)."""

    description: str
    parameters: dict[str, Any]

    def __call__(self, arguments: dict[str, Any], context: ToolContext) -> ToolReply: ...


def schema_of(name: str, tool: Any) -> dict[str, Any]:
    """The tool as a chat template's `tools=` entry (the OpenAI function format Qwen's templates render)."""
    return {"type": "function", "function": {"name": name, "description": tool.description, "parameters": tool.parameters}}


_TYPES = {"number": (int, float), "integer": (int,), "string": (str,), "boolean": (bool,), "array": (list,),
          "object": (dict,)}


def check_arguments(arguments: Any, schema: Mapping[str, Any]) -> str | None:
    """Why `arguments` do not fit `schema` (the subset of JSON schema tools use: an object of `properties` with
    `type`, `items`, `minItems`/`maxItems`, `required`, no extra keys unless `additionalProperties`); None if they do.
    A `type` outside that subset (a list of types, "null") is not checked: the tool checks such values itself."""
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    properties = schema.get("properties", {})
    missing = [k for k in schema.get("required", ()) if k not in arguments]
    if missing:
        return f"missing argument(s) {', '.join(missing)}"
    extra = [k for k in arguments if k not in properties]
    if extra and not schema.get("additionalProperties", False):
        return f"unknown argument(s) {', '.join(extra)}; expected {', '.join(properties) or 'none'}"
    for key, value in arguments.items():
        why = _check_value(value, properties.get(key, {}))
        if why:
            return f"argument {key!r} {why}"
    return None


def _check_value(value: Any, schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _TYPES:  # unset, a list of types, "null": not checked here
        return None
    if isinstance(value, bool) and kind != "boolean" or not isinstance(value, _TYPES[kind]):
        return f"must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}, got {json_type(value)}"
    if kind in ("number", "integer") and not math.isfinite(value):
        return f"must be finite, got {value}"
    if kind == "array":
        low, high = schema.get("minItems", 0), schema.get("maxItems", math.inf)
        if not low <= len(value) <= high:
            size = f"{low}" if low == high else f"{low} to {high}"
            return f"must hold {size} items, got {len(value)}"
        for i, item in enumerate(value):
            why = _check_value(item, schema.get("items", {}))
            if why:
                return f"item {i} {why}"
    return None


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value."""
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
