"""The tools' schemas rendered through the model family's chat template (`tools=` of `apply_chat_template`).

Qwen's instruct templates (Qwen2.5-VL, Qwen3-VL, Qwen3.5) list the tools in the system turn and teach the
`<tool_call>` format; the HF processors' default templates (what the tiny test models carry) ignore `tools=`. A
template that drops a tool is an error naming it, not a prompt that silently lacks the tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evr1.errors import ConfigError
from evr1.tools.base import schema_of


def tool_schemas(names: Sequence[str]) -> list[dict[str, Any]]:
    """The `tools=` list of the registered tools `names`, in order (unknown names fail with the known ones)."""
    from evr1.registry import TOOLS

    return [schema_of(name, TOOLS[name]) for name in names]


def render_with_tools(
    processor: Any, messages: Sequence[Mapping[str, Any]], names: Sequence[str], *, chat_template: str | None = None,
    add_generation_prompt: bool = True,
) -> str:
    """`messages` rendered by the chat template (`chat_template`, else the processor's) with the tools `names`."""
    text = processor.apply_chat_template(
        list(messages), tools=tool_schemas(names), chat_template=chat_template, tokenize=False,
        add_generation_prompt=add_generation_prompt,
    )
    check_shown(text, names)
    return text


def check_shown(text: str, names: Sequence[str]) -> None:
    """Raise a `ConfigError` unless the rendered `text` names every tool of `names` (as its schema's JSON does)."""
    missing = [name for name in names if f'"{name}"' not in text]
    if missing:
        raise ConfigError(
            f"the chat template does not show the tool(s) {', '.join(missing)} to the model (it ignores `tools=`);"
            " set data.prompt.chat_template to a template that renders tools (a Qwen instruct model's own does)"
        )
