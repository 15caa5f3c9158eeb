"""Binding task folders to data: every document lands in a task, and a failed bind writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evr1.data.records import RecordError
from evr1.errors import Evr1Error
from evr1.eval.lmms.tasks import bind, doc_to_visual

SUBTASK = "evr1_stock: mvbench/mvbench_{subset}.yaml\nevr1_subset: {subset}\ntask: t_{subset}\n"


def test_documents_of_a_subset_no_task_reads_are_an_error(bench_root: Path, tmp_path: Path) -> None:
    evals = tmp_path / "evals" / "mvbench"
    evals.mkdir(parents=True)
    (evals / "one.yaml").write_text(SUBTASK.format(subset="action_sequence"))  # object_shuffle has no template
    with pytest.raises(Evr1Error, match=r"subset 'object_shuffle' \(3\)"):
        bind(bench_root, tmp_path / "out", ["mvbench"], tmp_path / "evals")
    assert not (tmp_path / "out" / "mvbench").exists()


def test_a_failed_bind_writes_nothing_and_keeps_the_old_folders(bench_root: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for folder in ("videomme", "mvbench"):
        shutil.copytree(bench_root / folder, data / folder)
    first = bind(data, tmp_path / "out", ["mvbench"])
    assert first[0].tasks == {"evr1_mvbench_action_sequence": 2, "evr1_mvbench_object_shuffle": 3}
    before = sorted(p.name for p in (tmp_path / "out" / "mvbench").iterdir())
    bad = data / "mvbench" / "json" / "object_shuffle.json"
    bad.write_text(bad.read_text().replace('"candidates"', '"candidatez"', 1))
    with pytest.raises(RecordError, match="object_shuffle.json"):
        bind(data, tmp_path / "out", ["videomme", "mvbench"])
    assert not (tmp_path / "out" / "videomme").exists()  # converted first, nothing written
    assert sorted(p.name for p in (tmp_path / "out" / "mvbench").iterdir()) == before


@pytest.mark.parametrize(("media", "expected"), [
    ([{"type": "video", "path": "/d/a.mp4", "video_start": None, "video_end": None}], ["/d/a.mp4"]),
    ([{"type": "video", "path": "/d/a.mp4", "video_start": 1.5, "video_end": None}],
     [{"type": "video", "path": "/d/a.mp4", "video_start": 1.5}]),
    ([{"type": "image", "path": "/d/i.png"}, {"type": "video", "path": "/d/b.mp4", "video_end": 3.0}],
     ["/d/i.png", {"type": "video", "path": "/d/b.mp4", "video_end": 3.0}]),
])
def test_visuals_drop_the_loaders_empty_clip_bounds(media, expected) -> None:
    assert doc_to_visual({"evr1_media": media}) == expected
