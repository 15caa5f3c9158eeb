"""Rows for the eval tests: sample rows as the sample loop writes them, aggregation rows, and both protocols' blocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from evr1.eval.api import evaluate
from evr1.eval.protocols import block
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec


def sample_row(answer: Any, response: str | None, score: float = 0.0, ptype: str = "multiple_choice",
               error: str | None = None, **meta: Any) -> dict[str, Any]:
    """A sample row as the sample loop writes it (`score`: evr1's strict item score)."""
    return {"id": f"x/{len(meta)}", "benchmark": "x", "problem_type": ptype, "response": response, "answer": answer,
            "score": score, "parsed": None if response in (None, "") else response, "error": error, "components": {},
            "meta": meta}


def scored(score: float, **meta: Any) -> dict[str, Any]:
    """A row as an aggregation reads it: its score and meta."""
    return {"score": score, "meta": meta}


def both(name: str, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The official and the strict block of `rows` under benchmark `name`."""
    bench = BENCHMARKS.get(name)
    return block(bench, rows, "official"), block(bench, rows, "strict")


def write_json(root: Path, relative: str, content: Any) -> Path:
    """`content` as JSON at `root / relative` (folders made)."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


# pieces of generated answers for the reader-equivalence properties
PIECES = st.sampled_from(["A", "B", "C", "D", "E", "(", ")", ".", ":", " ", ",", "!", "'", '"', "x", "is", "Answer",
                          "the answer is ", "The answer is ", "Best option: ", "I choose ", "答案是", "\n", "Bob", "a"])


# -- EasyVideoR1's converted rows against the official rows of the same items (tests/eval/benchmarks/) --------------


def write_files(root: Path, files: dict[str, Any]) -> Path:
    """Each `relative path: rows` of `files` under `root` (a `.jsonl` one row a line, else one JSON document)."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(json.dumps(r) for r in content) if path.suffix == ".jsonl" else json.dumps(content, indent=1)
        path.write_text(text, encoding="utf-8")
    return root


def score_strict(root: Path, name: str, answers: dict[str, str], judge: JudgeSpec | None = None) -> dict[str, Any]:
    """Benchmark `name`'s result under `root` with the scripted `answers`, under the strict headline (these tests compare
    importers, official rows against EasyVideoR1's, under evr1's rules); every record must be answered."""
    responder = ScriptedResponder(answers)
    spec = EvalSpec(protocol="strict", **({"judge": judge} if judge is not None else {}))
    got = evaluate(spec, responder, root / "run", benchmarks=[name], data_root=root)["benchmarks"][name]
    assert sorted(responder.asked) == sorted(answers)  # every record answered, none left to the default
    return got


def check_same(official: dict[str, Any], easy: dict[str, Any], score: float) -> None:
    """The official rows' result and EasyVideoR1's both reach `score`, with the same metrics, tables and count."""
    assert official["score"] == pytest.approx(score) and easy["score"] == pytest.approx(score)
    assert easy["metrics"] == pytest.approx(official["metrics"])
    assert easy["breakdowns"] == official["breakdowns"]
    assert easy["n"] == official["n"]


def easyvideor1_row(pid: Any, problem: str, options: list[str] | None, answer: str, path: str,
                    ptype: str = "multiple choice", **fields: Any) -> dict[str, Any]:
    """A row of EasyVideoR1's `eval/data/valid_data` (github.com/cyuQ1n/EasyVideoR1, commit 7ab338b)."""
    return {"problem_id": pid, "problem": problem, "data_type": "video", "problem_type": ptype, "options": options,
            "solution": f"<answer>{answer}</answer>", "path": path, **fields}
