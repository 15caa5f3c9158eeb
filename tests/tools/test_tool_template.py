"""The tools' schemas go through the chat template; a template that ignores them is an error."""

from __future__ import annotations

import json

import pytest

from evr1.errors import ConfigError
from evr1.models import load_processor
from evr1.models.testing import tiny_spec
from evr1.registry import TOOLS
from evr1.tools.template import render_with_tools, tool_schemas

# a minimal tool-aware template in the layout of Qwen's instruct templates (tools in the system turn)
TEMPLATE = (
    "{% if tools %}<|im_start|>system\n# Tools\n<tools>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    "Call a tool as <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call><|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MESSAGES = [{"role": "user", "content": "What colour is the square at 2 s?"}]


@pytest.fixture(scope="module")
def processor(tmp_path_factory: pytest.TempPathFactory):
    return load_processor(tiny_spec("qwen2.5-vl", tmp_path_factory.mktemp("models")))


def test_the_schemas_are_rendered_in_order(processor) -> None:
    text = render_with_tools(processor, MESSAGES, ["zoom", "seek"], chat_template=TEMPLATE)
    lines = text.split("<tools>\n")[1].split("</tools>")[0].splitlines()
    assert [json.loads(line) for line in lines] == tool_schemas(["zoom", "seek"])
    assert json.loads(lines[1])["function"] == {
        "name": "seek", "description": TOOLS["seek"].description, "parameters": TOOLS["seek"].parameters,
    }
    assert text.endswith("What colour is the square at 2 s?<|im_end|>\n<|im_start|>assistant\n")


def test_a_template_that_ignores_tools_is_an_error(processor) -> None:
    with pytest.raises(ConfigError, match="does not show the tool.s. seek, zoom to the model"):
        render_with_tools(processor, MESSAGES, ["seek", "zoom"])  # the HF processor's default template


def test_an_unknown_tool_is_named() -> None:
    with pytest.raises(KeyError, match="unknown tools name 'seeek'. Did you mean 'seek'"):
        tool_schemas(["seeek"])
