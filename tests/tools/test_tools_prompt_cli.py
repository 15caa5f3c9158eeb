"""`evr1 data prompt --tools`: the prompt shows the offered tools' schemas as the chat template renders them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_inproc import evr1 as run_evr1

from evr1.registry import TOOLS
from evr1.tools import schema_of

ROOT = Path(__file__).resolve().parents[2]
# tools in the system turn, one JSON line each, in the layout of Qwen's instruct templates
TEMPLATE = """{% if tools %}[tools]{{ '\\n' }}{% for t in tools %}{{ t | tojson }}{{ '\\n' }}{% endfor %}{% endif %}\
{% for m in messages %}[{{ m.role }}] {% if m.content is string %}{{ m.content }}{% else %}\
{% for c in m.content %}{% if c.type == 'text' %}{{ c.text }}{% endif %}{% endfor %}{% endif %}{{ '\\n' }}\
{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"""


def _args(tmp_path: Path, template: bool) -> tuple[str, ...]:
    row = {"id": "q", "problem": "Is it?", "problem_type": "boolean", "answer": True}
    (tmp_path / "d.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "chat.jinja").write_text(TEMPLATE)
    chosen = ("--set", f"data.prompt.chat_template='{tmp_path / 'chat.jinja'}'") if template else ()
    return ("data", "prompt", "quickstart", "--records", str(tmp_path / "d.jsonl"), *chosen, "--tools", "seek,zoom")


def _evr1(*args: str) -> subprocess.CompletedProcess:
    return run_evr1(*args, cwd=ROOT)


def test_the_prompt_shows_the_tools(tmp_path: Path) -> None:
    out = _evr1(*_args(tmp_path, template=True))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1] == "[tools]"
    assert [json.loads(line) for line in lines[2:4]] == [schema_of(n, TOOLS[n]) for n in ("seek", "zoom")]
    assert lines[4].startswith("[system] ")


def test_a_template_without_tools_is_a_short_error(tmp_path: Path) -> None:
    out = _evr1(*_args(tmp_path, template=False))  # the tiny model's own template ignores tools=
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "the chat template does not show the tool(s) seek, zoom to the model" in out.stderr
