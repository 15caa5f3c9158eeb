"""Rows for the eval tests: sample rows as the sample loop writes them, aggregation rows, and both protocols' blocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS


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
