"""Charades-STA's official numbers: the merge of repeated queries (`evr1.eval.official_rules.one_per_query`: lmms-eval's
task keys each prediction by video, caption and reference span, so a repeated query counts once, with its last
prediction) and the spans its reader takes (`evr1.eval.official_spans`); worked by hand, and against lmms-eval's own
aggregation on the same predictions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

# (video, caption, reference span, response); IoUs with the reference in the comments
ITEMS = [
    ("v1.mp4", "person opens a door", [2.0, 6.0], "The event happens in 2.0 - 6.0 seconds."),  # 1, replaced below
    ("v1.mp4", "person opens a door", [2.0, 6.0], "The event happens in 4.0 - 10.0 seconds."),  # the one kept: 2/8
    ("v1.mp4", "person opens a door", [7.0, 9.0], "The event happens in 7.0 - 9.0 seconds."),  # another span: 1
    ("v2.mp4", "person opens a door", [2.0, 6.0], "The event happens in 3.0 - 6.0 seconds."),  # another video: 3/4
    ("v1.mp4", "person sits down", [2.0, 6.0], "The event happens in 0.0 - 1.0 seconds."),  # another query: 0
]

# responses of all kinds to one reference span, [2, 6] (distinct queries); IoUs in the comments
READ = [("v3.mp4", f"query {i}", [2.0, 6.0], text) for i, text in enumerate([
    "", "no idea", "4",  # nothing, nothing, one number: 0
    "[2, 6]",  # one sentence: its first number only, no span: 0
    "From 2 to 6 seconds.",  # 1
    "0:03 - 0:06",  # 3/4
    "10 - 4",  # reversed, swapped: 2/8
    "It starts at 2.\nIt ends at 5.",  # the first number of each sentence, 2 - 5: 3/4
    "A specific example is : 20.8 - 30.0 seconds. The event happens in 3 - 7 seconds.",  # the example cut out: 3/5
    "The event happens in 2 - 4 seconds. It could also be 0:10 - 0:12.",  # one sentence, the clock range first: 0
])]


def _rows(items: list[tuple[str, str, list[float], str]] = ITEMS) -> list[dict[str, Any]]:
    return [{"id": f"charades_sta/{i}", "problem_type": "temporal_grounding", "response": text, "parsed": text,
             "answer": {"time": span}, "score": 0.0, "error": None, "meta": {"video": video, "caption": caption}}
            for i, (video, caption, span, text) in enumerate(items)]


def test_a_repeated_query_counts_once_with_its_last_prediction() -> None:
    got = block(BENCHMARKS.get("charades_sta"), _rows(), "official")
    assert (got["n"], got["dropped"]) == (4, 1)
    assert got["metrics"] == pytest.approx({"mIoU": 100 * (0.25 + 1 + 0.75 + 0) / 4, "R@0.3": 50.0, "R@0.5": 50.0,
                                            "R@0.7": 50.0})
    assert block(BENCHMARKS.get("charades_sta"), _rows(), "strict")["n"] == 5  # strict counts every item


def test_rows_without_the_query_meta_are_kept_apart() -> None:
    rows = [{**r, "meta": {}} for r in _rows()]
    assert block(BENCHMARKS.get("charades_sta"), rows, "official")["n"] == 5


def test_the_spans_the_task_reads() -> None:
    got = block(BENCHMARKS.get("charades_sta"), _rows(READ), "official")
    assert (got["n"], got["dropped"]) == (10, 0)
    assert got["metrics"] == pytest.approx({"mIoU": 100 * (1 + 0.75 + 0.25 + 0.75 + 0.6) / 10, "R@0.3": 40.0,
                                            "R@0.5": 40.0, "R@0.7": 30.0})


@pytest.mark.parametrize("items", [ITEMS, ITEMS + READ], ids=["repeated", "repeated+read"])
def test_equals_lmms_evals_charades_aggregation(items: list[tuple[str, str, list[float], str]]) -> None:
    from lmms_eval.tasks.charades_sta import utils as reference

    docs = [{"video": video, "caption": caption, "timestamp": span} for video, caption, span, _ in items]
    submitted = [reference.temporal_grounding_process_results_generation(doc, [text])["charades_sta_mIOU"]
                 for doc, (*_, text) in zip(docs, items)]
    theirs = reference._temporal_grounding_compute_metrics(submitted)
    ours = block(BENCHMARKS.get("charades_sta"), _rows(items), "official")["metrics"]
    assert ours == pytest.approx({"mIoU": theirs["mIOU"], "R@0.3": theirs["IOU@3"], "R@0.5": theirs["IOU@5"],
                                  "R@0.7": theirs["IOU@7"]})


def test_the_importers_keep_video_and_caption(tmp_path: Path) -> None:
    folder = tmp_path / "charades_sta"
    folder.mkdir()
    rows = [{"video": "AO8RW.mp4", "caption": "a person is putting a book on a shelf.", "timestamp": [0.0, 6.9],
             "duration": 33.67}] * 2
    (folder / "charades_test.json").write_text(json.dumps(rows))
    records = BENCHMARKS.get("charades_sta").load(tmp_path)
    assert [(r.meta["video"], r.meta["caption"]) for r in records] == [("AO8RW.mp4", rows[0]["caption"])] * 2
