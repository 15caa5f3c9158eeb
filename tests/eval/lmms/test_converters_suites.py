"""The stock lmms-eval tasks of 8 suite benchmarks on local data, through real lmms-eval.

Fixtures (official formats, generated videos) are bound to `evals/` once per module; each task's
documents must load, show the question and options, and give the model our absolute video paths;
`ScriptedChat` answers from TABLE (right / wrong / unparseable items) and lmms-eval's numbers must
equal the hand-computed ones in EXPECTED.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evr1.errors import ConfigError
from evr1.eval.fixtures import write_fixtures
from evr1.eval.lmms import stock_fixes_suites as fixes
from evr1.eval.lmms.model import ScriptedChat
from evr1.eval.lmms.tasks import Bound, bind
from evr1.registry import BENCHMARKS

SUITES = ["mvbench", "tempcompass", "mmvu", "video_mmmu", "videomathqa", "vsibench", "charades_sta", "ovobench"]
NO_JUDGE = [n for n in SUITES if n != "mmvu"]

TABLE = {
    # action_sequence: A right, B wrong (answer C) -> 50; object_shuffle: right, empty, hedge -> 1/3.
    "mvbench/action_sequence/2": "A", "mvbench/action_sequence/12": "B",
    "mvbench/object_shuffle/2": "(B) green", "mvbench/object_shuffle/14": "", "mvbench/object_shuffle/24": "A or C",
    # caption matching right; multi-choice: right, "C" out of range (2 options); yes/no: right, wrong.
    "tempcompass/caption_matching/t1/2": "Caption A", "tempcompass/multi-choice/t1/2": "B. right",
    "tempcompass/multi-choice/t1/8": "C", "tempcompass/yes_no/t1/2": "Yes, it does.", "tempcompass/yes_no/t1/8": "yes",
    # 10 options (J valid) right; numeric 42 answered 41 (in words); Adaptation empty.
    "video_mmmu/p1": "The answer is J.", "video_mmmu/c1": "forty-one", "video_mmmu/a1": "",
    # mcq: right, wrong ("Answer: B"; the stock regex reads the A of "Answer"); mbin: q1 both right, q2 one empty.
    "videomathqa/mcq/q1": "E", "videomathqa/mcq/q2": "Answer: B",
    "videomathqa/mbin/q1/0": "A", "videomathqa/mbin/q1/1": "B", "videomathqa/mbin/q2/0": "A", "videomathqa/mbin/q2/1": "",
    # counting exact (MRA 1); distance 2.5 vs 2.0 (error 0.25 < 1 - theta for theta 0.50..0.70: 5/10); route 1/2.
    "vsibench/1": "4", "vsibench/2": "2.5", "vsibench/3": "B", "vsibench/4": "unsure",
    # IoUs 1, 1/2 ([1, 2] vs [0, 2]), 0.
    "charades_sta/c1": "The event happens in 1.0 - 3.0 seconds.", "charades_sta/c2": "[1, 2]", "charades_sta/c3": "no idea",
    # backward EPM right, ASI empty -> 50; realtime STU right -> 100; forward REC 1/2, SSR 1/2 -> 50.
    "ovobench/1": "B", "ovobench/2": "", "ovobench/3": "A",
    "ovobench/4/0": "1", "ovobench/4/1": "3", "ovobench/5/0": "No.", "ovobench/5/1": "maybe",
}



def no_items(*dims: str) -> dict[str, float]:
    return {f"{d}_accuracy": float("nan") for d in ("action", "attribute_change", *dims)}


EXPECTED: dict[str, dict[str, float]] = {
    "evr1_mvbench": {"mvbench_accuracy": (50 + 100 / 3) / 2},
    "evr1_mvbench_action_sequence": {"mvbench_accuracy": 50.0},
    "evr1_mvbench_object_shuffle": {"mvbench_accuracy": 100 / 3},
    "evr1_tempcompass": {"avg_accuracy": 60.0},
    # Every TempCompass task reports all five dimensions: NaN where it has no item of one.
    "evr1_tempcompass_caption_matching": {"avg_accuracy": 100.0, "order_accuracy": 100.0, **no_items("speed", "direction")},
    "evr1_tempcompass_multi_choice": {"avg_accuracy": 50.0, "direction_accuracy": 100.0, "speed_accuracy": 0.0, **no_items("order")},
    "evr1_tempcompass_yes_no": {"avg_accuracy": 50.0, "direction_accuracy": 100.0, "speed_accuracy": 0.0, **no_items("order")},
    "evr1_video_mmmu": {"mmmu_acc": 100 / 3},
    "evr1_video_mmmu_perception": {"mmmu_acc": 100.0},
    "evr1_video_mmmu_comprehension": {"mmmu_acc": 0.0},
    "evr1_video_mmmu_adaptation": {"mmmu_acc": 0.0},
    "evr1_videomathqa_mcq": {"videomathqa_perception_score": 50.0},
    "evr1_videomathqa_mbin": {"videomathqa_perception_score": 50.0},
    "evr1_vsibench": {"vsibench_overall": (100 + 50 + 50) / 3, "object_counting_mra": 100.0,
                      "object_abs_distance_mra": 50.0, "route_planning_accuracy": 50.0},
    "evr1_charades_sta": {"charades_sta_mIOU": 50.0, "charades_sta_IOU@3": 200 / 3, "charades_sta_IOU@5": 200 / 3,
                          "charades_sta_IOU@7": 100 / 3},
    "evr1_ovobench": {"ovobench_score": (50 + 100 + 50) / 3},
    "evr1_ovobench_backward": {"ovobench_score": 50.0},
    "evr1_ovobench_realtime": {"ovobench_score": 100.0},
    "evr1_ovobench_forward": {"ovobench_score": 50.0},
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite-benchmarks")
    write_fixtures(root, SUITES)
    return root


@pytest.fixture(scope="module")
def bound(root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Bound]]:
    out = tmp_path_factory.mktemp("suite-tasks")
    return out, bind(root, out, SUITES)


@pytest.fixture(scope="module")
def manager(bound: tuple[Path, list[Bound]], lmms_env: Path) -> Any:
    from lmms_eval.tasks import TaskManager

    return TaskManager(include_path=[str(bound[0])], include_defaults=False)


@pytest.fixture(scope="module")
def results(bound: tuple[Path, list[Bound]], manager: Any) -> dict[str, Any]:
    """One lmms-eval run over the 7 benchmarks that need no judge."""
    from lmms_eval.evaluator import simple_evaluate

    chat = ScriptedChat(TABLE)
    names = [n for b in bound[1] if b.benchmark in NO_JUDGE for n in b.names]
    out = simple_evaluate(model=chat, tasks=names, task_manager=manager, log_samples=True)
    assert out is not None, "lmms-eval returned no results"
    assert sorted(chat.asked) == sorted(TABLE), "every document is asked exactly once"
    return out["results"]


def test_binding_writes_one_task_per_subset_with_documents(bound: tuple[Path, list[Bound]]) -> None:
    tasks = {b.benchmark: b.tasks for b in bound[1]}
    assert tasks["mvbench"] == {"evr1_mvbench_action_sequence": 2, "evr1_mvbench_object_shuffle": 3}
    assert tasks["tempcompass"] == {"evr1_tempcompass_caption_matching": 1, "evr1_tempcompass_multi_choice": 2,
                                    "evr1_tempcompass_yes_no": 2}
    assert tasks["ovobench"] == {"evr1_ovobench_backward": 2, "evr1_ovobench_forward": 4, "evr1_ovobench_realtime": 1}
    assert tasks["videomathqa"] == {"evr1_videomathqa_mbin": 4, "evr1_videomathqa_mcq": 2}
    by_name = {b.benchmark: b for b in bound[1]}
    assert "evr1_tempcompass_captioning" in by_name["tempcompass"].skipped
    assert len(by_name["mvbench"].skipped) == 18
    assert {b.benchmark: b.names for b in bound[1] if b.groups} == {
        "mvbench": ["evr1_mvbench"], "tempcompass": ["evr1_tempcompass"], "video_mmmu": ["evr1_video_mmmu"],
        "videomathqa": ["evr1_videomathqa"], "ovobench": ["evr1_ovobench"]}


def _leaf_tasks(tree: dict[Any, Any]) -> Iterator[Any]:
    for value in tree.values():
        if isinstance(value, dict):
            yield from _leaf_tasks(value)
        else:
            yield value


@pytest.mark.parametrize("name", SUITES)
def test_documents_show_the_question_options_and_our_video(name: str, root: Path, bound: tuple[Path, list[Bound]], manager: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.tasks import get_task_dict

    monkeypatch.setenv("EVR1_JUDGE_URL", "http://127.0.0.1:9/v1")  # MMVU's open-ended prompt needs a judge set
    monkeypatch.setenv("EVR1_JUDGE_MODEL", "judge")
    records = {r.id: r for r in BENCHMARKS.get(name).load(root)}
    names = next(b.names for b in bound[1] if b.benchmark == name)
    seen = set()
    for task in _leaf_tasks(get_task_dict(names, manager)):
        for doc in task.test_docs():
            record = records[doc["evr1_id"]]
            seen.add(record.id)
            text = task.doc_to_text(doc)
            shown = doc["caption"] if name == "charades_sta" else doc["activity"] if doc.get("task") == "REC" else record.problem
            assert shown and shown in text, (record.id, text)
            for option in record.options or []:
                assert option in text, (record.id, option, text)
            visual = task.doc_to_visual(doc)[0]
            video = record.media[0]
            path = visual if isinstance(visual, str) else visual["path"]
            assert path == str((root / video.path).resolve()) and Path(path).is_file()
            if video.end is not None:
                assert (visual["video_start"], visual["video_end"]) == (video.start, video.end)
    assert seen == set(records), "every record is a document of one task"


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_scores_equal_the_hand_computed_ones(task: str, results: dict[str, Any]) -> None:
    got = {k.removesuffix(",none"): v for k, v in results[task].items() if k.endswith(",none") and "_stderr" not in k}
    assert got == pytest.approx(EXPECTED[task], abs=1e-9, nan_ok=True)


def test_vsibench_direction_types_are_one_task() -> None:
    """object_rel_direction = mean of its easy/medium/hard means; overall = mean over the tasks."""
    def item(qtype: str, score: float) -> dict[str, Any]:
        return {"score": score, "meta": {"vsi_task": fixes.vsi_task(qtype), "question_type": qtype}}

    rows = [item("object_rel_direction_easy", 1.0), item("object_rel_direction_medium", 0.0),
            item("object_rel_direction_hard", 0.0), item("object_rel_direction_hard", 0.0), item("route_planning", 1.0)]
    assert fixes.vsibench_score(rows) == pytest.approx((100 / 3 + 100) / 2)


def test_mmvu_open_ended_is_judged_by_evr1s_judge(bound: tuple[Path, list[Bound]], manager: Any, judge: Any) -> None:
    from lmms_eval.evaluator import simple_evaluate

    chat = ScriptedChat({"mmvu/mu1": "B", "mmvu/mu2": "combustion"})
    os.environ.update(EVR1_JUDGE_URL=judge.url, EVR1_JUDGE_MODEL="judge")
    try:
        out = simple_evaluate(model=chat, tasks=["evr1_mmvu"], task_manager=manager, log_samples=True)
    finally:
        for key in ("EVR1_JUDGE_URL", "EVR1_JUDGE_MODEL"):
            os.environ.pop(key)
    assert len(judge.requests) == 1  # the multiple-choice item is scored locally
    assert out["results"]["evr1_mmvu"]["accuracy,none"] == pytest.approx((100 + 80) / 2)  # the judge replies 8/10


def test_mmvu_without_a_judge_fails_before_generation(manager: Any) -> None:
    from lmms_eval.evaluator import simple_evaluate

    chat = ScriptedChat({})
    with pytest.raises(ConfigError, match="'mmvu' scores open_ended answers with an LLM judge: set EVR1_JUDGE_URL"):
        simple_evaluate(model=chat, tasks=["evr1_mmvu"], task_manager=manager)
    assert chat.asked == []


def test_tempcompass_captioning_needs_the_stock_judge(lmms_env: Path) -> None:
    doc = {"evr1_id": "tempcompass/captioning/t1/1", "dim": "speed",
           "evr1_record": {"meta": {"format": "captioning", "dimension": "speed"}},
           "question": "Describe the motion.", "mc_question": "How fast?\nA. slow\nB. fast", "mc_answer": "A. slow"}
    empty = fixes.tempcompass_process_results_captioning(doc, [""])
    assert empty["avg_accuracy"]["rating"] == 0 and empty["avg_accuracy"]["score"] == 0.0
    assert fixes.tempcompass_speed(list(empty.values())[:1]) == 0.0
    with pytest.raises(ConfigError, match="'tempcompass/captioning/t1/1' needs the stock LLM judge: set OPENAI_API_KEY"):
        fixes.tempcompass_process_results_captioning(doc, ["A square moves slowly."])
