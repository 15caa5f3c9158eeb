"""LVBench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.eval.benchmarks.lvbench import lvbench_item
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import sample_row, scored, write_json


@pytest.mark.parametrize(("response", "score"), [
    ("B", 1.0), ("(B) the dog", 1.0), ("B. the dog", 1.0), ("B or C", 1.0), (" ( B ) ", 1.0),
    ("The answer is B", 0.0),  # "T"
    ("b", 0.0), ("", 0.0), ("C", 0.0),
    (None, None),  # no answer recorded: not in the answers file, left out
])
def test_lvbench_polished_letter(response: str | None, score: float | None) -> None:
    assert lvbench_item(sample_row("B", response)) == score


def test_lvbench_types_count_a_question_under_each() -> None:
    rows = [sample_row("A", "A", 1, category=["key information retrieval", "reasoning"]), sample_row("B", "(C)", 0, category=["reasoning"]),
            sample_row("C", None, 0, error="generation failed", category=["reasoning"])]
    official = block(BENCHMARKS.get("lvbench"), rows, "official")
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 1)
    assert official["breakdowns"]["category"] == {"key information retrieval": {"score": 100.0, "n": 1},
                                                  "reasoning": {"score": 50.0, "n": 2}}


def test_lvbench_counts_a_question_under_each_of_its_types() -> None:
    rows = [scored(1, category=["entity recognition", "reasoning"]), scored(0, category=["reasoning"]), scored(0, category="summarization")]
    result = BENCHMARKS.get("lvbench").aggregate(rows)
    assert result.score == pytest.approx(100 / 3)
    assert result.breakdowns["category"] == {"entity recognition": (100.0, 1), "reasoning": (50.0, 2), "summarization": (0.0, 1)}


def test_lvbench_importer_keeps_every_type(tmp_path: Path) -> None:
    write_json(tmp_path, "lvbench/lvbench.json", [{"uid": 7, "video_path": "v.mp4", "question": "Who?\n(A) a\n(B) b",
                                               "answer": "B", "question_type": ["entity recognition", "reasoning"]}])
    (record,) = BENCHMARKS.get("lvbench").load(tmp_path)
    assert record.meta["category"] == ["entity recognition", "reasoning"]

