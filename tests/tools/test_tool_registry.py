"""`TOOLS` is a registry like the others: checked registration, `evr1 list tools`, `describe`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evr1.registry import TOOLS, RegistrationError
from evr1.tools import ToolReply, schema_of

EVR1 = str(Path(sys.executable).parent / "evr1")


class Echo:
    """Says its text back."""

    description = "Echo a text."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    def __call__(self, arguments: dict[str, Any], context: Any) -> ToolReply:
        return ToolReply(arguments["text"])


class NoContext(Echo):
    def __call__(self, arguments: dict[str, Any]) -> ToolReply:  # type: ignore[override]
        return ToolReply(arguments["text"])


class NoSchema:
    description = "lacks parameters"

    def __call__(self, arguments: dict[str, Any], context: Any) -> ToolReply:
        return ToolReply("")


@pytest.fixture
def cleanup():
    yield
    for name in ("tools_test/echo", "tools_test/bad"):
        TOOLS.unregister(name)


def test_a_plugin_registers_and_is_described(cleanup) -> None:
    TOOLS.register("tools_test/echo", Echo())
    assert TOOLS["tools_test/echo"]({"text": "hi"}, None) == ToolReply("hi")
    described = TOOLS.describe("tools_test/echo")
    assert described.summary == "Says its text back." and described.origin == "runtime"
    assert schema_of("tools_test/echo", TOOLS["tools_test/echo"]) == {
        "type": "function",
        "function": {"name": "tools_test/echo", "description": "Echo a text.", "parameters": Echo.parameters},
    }


@pytest.mark.parametrize(("tool", "why"), [(NoContext(), "context"), (NoSchema(), "parameters")])
def test_a_tool_evr1_cannot_call_fails_at_registration(cleanup, tool, why) -> None:
    with pytest.raises(RegistrationError, match=f"cannot register tools 'tools_test/bad'.*{why}"):
        TOOLS.register("tools_test/bad", tool)


def test_builtins_are_listed_by_the_cli() -> None:
    out = subprocess.run([EVR1, "list", "tools"], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.splitlines()[0] == "tools"
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["seek", "zoom"]
    assert TOOLS.describe("seek").module == "evr1.tools.builtin"
