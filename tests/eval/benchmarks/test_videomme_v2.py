"""Video-MME-v2: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from evr1.eval.benchmarks.videomme_v2 import group_score, grouped_nonlinear, logic_chain, videomme_v2_item

from ..rows import both, sample_row, scored


def _v2(group: str, kind: str, answers: str, responses: list[str | None], structure: str | None = None) -> list[dict]:
    meta = {"group_id": group, "group_type": kind, "level": 2, **({"group_structure": structure} if structure else {})}
    return [{**sample_row(a, r, float(r is not None and r.endswith(a)), **meta, question_id=f"{group}-{i}")}
            for i, (a, r) in enumerate(zip(answers, responses), start=1)]


def test_videomme_v2_unread_answer_lowers_relevance_and_passes_a_logic_chain() -> None:
    rows = [*_v2("g1", "relevance", "ABCC", ["A", "Final Answer: B", "", "C"]),  # marks 1, 1, -1, 1: count 2
            *_v2("g2", "logic", "ABCD", ["A", "none", "B", "D"], "[1, 2, 3, 4]")]  # marks 1, -1, 0, 1: chain 2
    official, strict = both("videomme_v2", rows)
    assert official["metrics"]["relevance_score"] == pytest.approx(100 * 4 / 16)  # count 2 (strict: 3 right, 9/16)
    assert official["metrics"]["logic_score"] == pytest.approx(100 * 4 / 16)  # -1 continues the chain (strict: 1/16)
    assert official["score"] == pytest.approx(25.0) and official["metrics"]["relevance_linear_score"] == 50.0
    assert official["metrics"]["accuracy"] == pytest.approx(500 / 6)  # 5 of the 6 answers read
    assert strict["score"] == pytest.approx(100 * (9 / 16 + 1 / 16) / 2)
    assert official["breakdowns"]["level"] == {"2": {"score": 25.0, "n": 2}}


def test_videomme_v2_reader() -> None:
    assert videomme_v2_item(sample_row("H", "Final Answer: H."))["components"]["mark"] == 1
    assert videomme_v2_item(sample_row("A", "Answer: the dog"))["components"]["mark"] == -1  # "Answer:" is a prefix
    assert videomme_v2_item(sample_row("A", "Because"))["components"]["mark"] == 0  # reads B


def _v2_groups(gid: str, right: list[int], gtype: str, levels: list[int], struct: str = "[1, 2, 3, 4]", head: str = "h") -> list[dict[str, Any]]:
    return [scored(s, group_id=gid, question_id=f"{gid}-{i}", group_type=gtype, group_structure=struct, level=lv,
                 second_head=f"{head}{lv}") for i, (s, lv) in enumerate(zip(right, levels), 1)]


def test_videomme_v2_breakdowns_are_group_scores_labelled_by_the_last_question() -> None:
    # g1: relevance, level 1, 3/4 right -> 9/16. g2: logic [1,2,3,4], right [T,T,F,T] -> chain 2 -> 4/16; its questions
    # are levels 2,2,2,3: the group counts under level 3 (its last question). g3: relevance, level 1, 4/4 -> 1.
    # Listed out of order: the order is the question number, not the row order.
    g2 = _v2_groups("g2", [1, 1, 0, 1], "logic", [2, 2, 2, 3])
    rows = [*_v2_groups("g1", [1, 1, 1, 0], "relevance", [1] * 4), g2[3], *g2[:3], *_v2_groups("g3", [1, 1, 1, 1], "relevance", [1] * 4)]
    result = grouped_nonlinear()(rows)
    assert result.score == pytest.approx(100 * (9 / 16 + 4 / 16 + 1) / 3)
    assert result.breakdowns["level"] == {"1": (pytest.approx(100 * (9 / 16 + 1) / 2), 2), "3": (25.0, 1)}
    assert result.breakdowns["group_type"] == {"logic": (25.0, 1), "relevance": (pytest.approx(100 * (9 / 16 + 1) / 2), 2)}
    assert result.breakdowns["second_head"] == {"h1": (pytest.approx(100 * (9 / 16 + 1) / 2), 2), "h3": (25.0, 1)}
    assert result.metrics["relevance_linear_score"] == pytest.approx((75 + 100) / 2)
    assert result.metrics["accuracy"] == pytest.approx(100 * 10 / 12)


@pytest.mark.parametrize(("right", "structure", "chain"), [
    ([True, True, True, True], "[1, 2, 3, 4]", 4),
    ([True, False, True, True], "[1, 2, 3, 4]", 1),
    ([True, False, True, False], "[1, [2, 3], 4]", 2),  # the parallel pair: one of 2/3 is enough
    ([True, False, False, True], "[1, [2, 3], 4]", 1),
    ([False, True, True, True], "[[1, 2], 3, 4]", 1),  # the first pair: 2 alone starts the chain
    ([False, False, True, True], "[[1, 2], 3, 4]", 0),
])
def test_videomme_v2_logic_chain(right: list[bool], structure: str, chain: int) -> None:
    assert logic_chain(right, structure) == chain


def test_videomme_v2_group_scores() -> None:
    rel = [scored(s, group_type="relevance", question_id=f"q{i}", group_id="g") for i, s in enumerate([1, 1, 0, 0])]
    assert group_score(rel) == pytest.approx(4 / 16)
    logic = [scored(s, group_type="logic", group_structure=[[1, 2], 3, 4], question_id=f"q{i}") for i, s in enumerate([0, 1, 1, 0])]
    assert group_score(logic) == pytest.approx(1 / 10)  # 2 right stands in for the pair; the chain stops there
    with pytest.raises(ValueError, match="unknown Video-MME-v2 group structure"):
        logic_chain([True], "[1, 2]")

