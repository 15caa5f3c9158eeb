"""`evr1 data check --experiment NAME` warns about records whose prompt is over the experiment's
rollout.max_prompt_tokens (which a run drops as data failures), naming file, line and record."""

from __future__ import annotations

import json
from pathlib import Path

from cli_inproc import evr1

ROOT = Path(__file__).resolve().parents[2]


def test_a_prompt_over_the_limit_is_a_warning_naming_its_line(tmp_path: Path) -> None:
    rows = [
        {"id": "short", "problem": "Is it red?", "problem_type": "boolean", "answer": True},
        {"id": "long", "problem": "word " * 600, "problem_type": "boolean", "answer": True},  # quickstart allows 512
    ]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["data", "check", data, "--no-probe"]
    plain = evr1(*args, cwd=ROOT)
    assert plain.returncode == 0 and "max_prompt_tokens" not in plain.stderr, plain.stderr
    done = evr1(*args, "--experiment", "quickstart", cwd=ROOT)
    assert done.returncode == 0, done.stderr  # a warning: --strict makes it fail
    text = " ".join(done.stderr.split())
    assert f"warning: {data}:2: field 'problem': the prompt has " in text
    assert ("tokens (it has no media), over rollout.max_prompt_tokens=512: a run drops this record as a data failure"
            " (record 'long')") in text
    assert "'short'" not in text and "1 warnings" in " ".join(done.stdout.split())
