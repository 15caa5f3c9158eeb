"""`evr1 data prompt`: the exact prompt an experiment gives a record, through a chat template override
(`data.prompt.chat_template`), with its token counts; bad templates and indexes are short errors."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_inproc import evr1 as run_evr1
from PIL import Image

from evr1.data.prompt_view import collapse_runs, pick_record
from evr1.data.prompting import load_chat_template
from evr1.errors import ConfigError, Evr1Error
from evr1.specs import PromptSpec

ROOT = Path(__file__).resolve().parents[2]

TEMPLATE = """{% for m in messages %}[{{ m.role }}] {% if m.content is string %}{{ m.content }}{% else %}\
{% for c in m.content %}{% if c.type == 'text' %}{{ c.text }}{% elif c.type == 'image' %}\
<|vision_start|><|image_pad|><|vision_end|>{% endif %}{% endfor %}{% endif %}{{ '\\n' }}\
{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"""  # HF renders with trim_blocks: newlines as {{ }}
# quickstart: an empty system prompt and the instruction "Answer in <answer></answer>."; a 56x56 image is 2x2 merged patches
EXPECTED = """[system] 
[user] <|vision_start|><|image_pad|>×4<|vision_end|>Which shape?
A. circle
B. square
Answer in <answer></answer>.
[assistant] """


def evr1(*args: str) -> subprocess.CompletedProcess:
    return run_evr1(*args, cwd=ROOT)


def test_the_prompt_of_a_record_through_a_chat_template_file(tmp_path: Path) -> None:
    Image.fromarray(np.zeros((56, 56, 3), np.uint8)).save(tmp_path / "a.png")
    rows = [{"id": "first", "problem": "Is it?", "problem_type": "boolean", "answer": True},
            {"id": "pic", "problem": "Which shape?", "problem_type": "multiple_choice", "answer": "B",
             "options": ["circle", "square"], "media": [{"kind": "image", "path": "a.png"}]}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "chat.jinja").write_text(TEMPLATE)
    args = ("data", "prompt", "quickstart", "--records", str(tmp_path / "d.jsonl"), "--set", "data.cache.mode='bypass'",
            "--set", f"data.prompt.chat_template='{tmp_path / 'chat.jinja'}'")
    out = evr1(*args, "--id", "pic")
    assert out.returncode == 0, out.stderr
    header, _, text = out.stdout.partition("\n")
    assert text == EXPECTED + "\n"
    assert header.startswith(f"record 'pic' ({tmp_path / 'd.jsonl'}:2): ")

    from evr1.models import load_processor
    from evr1.specs import ModelSpec

    tokenizer = load_processor(ModelSpec(name="tiny-qwen2.5-vl")).tokenizer
    total = len(tokenizer(EXPECTED.replace("<|image_pad|>×4", "<|image_pad|>" * 4))["input_ids"])
    assert header.endswith(f": {total} tokens ({total - 4} text, 0 video, 4 image)")


def test_records_are_picked_by_position_or_id(tmp_path: Path) -> None:
    rows = [{"id": "a", "problem": "?", "problem_type": "boolean", "answer": True}, {"id": "b", "problem": "?"},
            {"id": "c", "problem": "?", "problem_type": "boolean", "answer": False}]
    file = tmp_path / "d.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [(r.id, line) for r, line in (pick_record(file, 2, None), pick_record(file, 0, "c"))] == [("c", 3), ("c", 3)]
    for index, record_id, message in [(3, None, f"--index 3: {file} holds 3 records (counted from 0)"),
                                      (0, "z", f"{file} holds no valid record with id 'z'"),
                                      (1, None, f"{file}:2: field 'problem_type'")]:
        with pytest.raises(Evr1Error, match=re.escape(message)):
            pick_record(file, index, record_id)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a<|video_pad|><|video_pad|><|video_pad|>b<|image_pad|>", "a<|video_pad|>×3b<|image_pad|>×1"), ("plain", "plain")],
)
def test_runs_of_placeholders_print_once_with_their_length(text: str, expected: str) -> None:
    assert collapse_runs(text, ("<|video_pad|>", "<|image_pad|>")) == expected


def test_a_broken_or_missing_template_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text(json.dumps({"id": "x", "problem": "Is it?", "problem_type": "boolean", "answer": True}) + "\n")
    (tmp_path / "bad.jinja").write_text("line one\n{% for m in messages %}never closed\n")
    base = ("data", "prompt", "quickstart", "--records", str(tmp_path / "d.jsonl"))
    bad = evr1(*base, "--set", f"data.prompt.chat_template='{tmp_path / 'bad.jinja'}'")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert f"data.prompt.chat_template: {tmp_path / 'bad.jinja'}:2: not a valid Jinja template" in " ".join(bad.stderr.split())
    with pytest.raises(ConfigError, match=re.escape(f"data.prompt.chat_template: {tmp_path / 'none.jinja'} does not exist")):
        load_chat_template(PromptSpec(chat_template=str(tmp_path / "none.jinja")))


STANDARD = """<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
Is the sky blue?
Give the final answer inside <answer></answer>.<|im_end|>
<|im_start|>assistant
"""  # the processor's own chat template, its default system prompt, the standard instruction


def test_without_an_experiment_the_standard_settings_build_the_prompt(tmp_path: Path) -> None:
    row = {"id": "q1", "problem": "Is the sky blue?", "problem_type": "boolean", "answer": True}
    (tmp_path / "r.jsonl").write_text(json.dumps(row) + "\n")
    out = run_evr1("data", "prompt", "--records", "r.jsonl", cwd=tmp_path)  # a folder without experiments
    assert out.returncode == 0, out.stderr
    note, header, text = out.stdout.split("\n", 2)
    assert note == ("no experiment: evr1's standard settings (model tiny-qwen2.5-vl, system prompt the chat template's"
                    " default, instruction 'Give the final answer inside <answer></answer>.')")
    assert text == STANDARD + "\n"

    from evr1.models import load_processor
    from evr1.specs import ModelSpec

    total = len(load_processor(ModelSpec(name="tiny-qwen2.5-vl")).tokenizer(STANDARD)["input_ids"])
    assert header == f"record 'q1' (r.jsonl:1): {total} tokens ({total} text, 0 video, 0 image)"
    changed = run_evr1("data", "prompt", "--records", "r.jsonl", "--set", "data.prompt.instruction='Yes or no.'",
                       cwd=tmp_path)
    assert changed.returncode == 0, changed.stderr
    assert "Is the sky blue?\nYes or no.<|im_end|>" in changed.stdout


def test_without_an_experiment_the_records_are_needed(tmp_path: Path) -> None:
    out = run_evr1("data", "prompt", cwd=tmp_path)
    assert (out.returncode, out.stderr) == (
        2, "error: evr1 data prompt needs --records FILE, or an EXPERIMENT whose first data.train file is read\n")
