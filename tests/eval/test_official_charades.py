"""Charades-STA's official merge of repeated queries (`evr1.eval.official_rules.one_per_query`): lmms-eval's task keys
each prediction by video, caption and reference span, so a repeated query counts once, with its last prediction;
worked by hand, and against lmms-eval's own aggregation on the same predictions."""

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


def _rows() -> list[dict[str, Any]]:
    return [{"id": f"charades_sta/{i}", "problem_type": "temporal_grounding", "response": text, "parsed": text,
             "answer": {"time": span}, "score": 0.0, "error": None, "meta": {"video": video, "caption": caption}}
            for i, (video, caption, span, text) in enumerate(ITEMS)]


def test_a_repeated_query_counts_once_with_its_last_prediction() -> None:
    got = block(BENCHMARKS.get("charades_sta"), _rows(), "official")
    assert (got["n"], got["dropped"]) == (4, 1)
    assert got["metrics"] == pytest.approx({"mIoU": 100 * (0.25 + 1 + 0.75 + 0) / 4, "R@0.3": 50.0, "R@0.5": 50.0,
                                            "R@0.7": 50.0})
    assert block(BENCHMARKS.get("charades_sta"), _rows(), "strict")["n"] == 5  # strict counts every item


def test_rows_without_the_query_meta_are_kept_apart() -> None:
    rows = [{**r, "meta": {}} for r in _rows()]
    assert block(BENCHMARKS.get("charades_sta"), rows, "official")["n"] == 5


def test_equals_lmms_evals_charades_aggregation() -> None:
    from lmms_eval.tasks.charades_sta import utils as reference

    docs = [{"video": video, "caption": caption, "timestamp": span} for video, caption, span, _ in ITEMS]
    submitted = [reference.temporal_grounding_process_results_generation(doc, [text])["charades_sta_mIOU"]
                 for doc, (*_, text) in zip(docs, ITEMS)]
    theirs = reference._temporal_grounding_compute_metrics(submitted)
    ours = block(BENCHMARKS.get("charades_sta"), _rows(), "official")["metrics"]
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
