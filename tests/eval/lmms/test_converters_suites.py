"""The stock lmms-eval tasks of 8 suite benchmarks on local data, through real lmms-eval.

Fixtures (official formats, generated videos) are bound to `evals/` once per module; each task's
documents must load, show the question and options, and give the model our absolute video paths;
`ScriptedChat` answers from TABLE (right / wrong / unparseable items) and lmms-eval's numbers must
equal the hand-computed ones in EXPECTED.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evr1.data.records import Record
from evr1.errors import ConfigError, Evr1Error
from evr1.eval.fixtures import write_fixtures
from evr1.eval.lmms.model import ScriptedChat
from evr1.eval.lmms.tasks import Bound, bind
from evr1.registry import BENCHMARKS

from ..verdict_judge import running_verdict_judge, verdict_requests

SUITES = ["mvbench", "tempcompass", "mmvu", "video_mmmu", "videomathqa", "vsibench", "charades_sta", "ovobench"]
NO_JUDGE = [n for n in SUITES if n != "mmvu"]

TABLE = {
    # action_sequence: A right, B wrong (answer C) -> 50; object_shuffle: right, empty, hedge -> 1/3.
    "mvbench/action_sequence/1": "A", "mvbench/action_sequence/2": "B",
    "mvbench/object_shuffle/1": "(B) green", "mvbench/object_shuffle/2": "", "mvbench/object_shuffle/3": "A or C",
    # caption matching right; multi-choice: right, "C" out of range (2 options); yes/no: right, wrong.
    "tempcompass/caption_matching/t1/1": "Caption A", "tempcompass/multi-choice/t1/1": "B. right",
    "tempcompass/multi-choice/t1/2": "C", "tempcompass/yes_no/t1/1": "Yes, it does.", "tempcompass/yes_no/t1/2": "yes",
    # 10 options (J valid) right; numeric 42 answered 41 (in words); Adaptation empty.
    "video_mmmu/Perception/p1": "The answer is J.", "video_mmmu/Comprehension/c1": "forty-one", "video_mmmu/Adaptation/a1": "",
    # mcq: right, "Answer: B" (the stock and official regex read the A of "Answer"); mbin: q1 both right, q2 one empty.
    "videomathqa/mcq/q1": "E", "videomathqa/mcq/q2": "Answer: B",
    "videomathqa/mbin/q1/0": "A", "videomathqa/mbin/q1/1": "B", "videomathqa/mbin/q2/0": "A", "videomathqa/mbin/q2/1": "",
    # counting exact (MRA 1); distance 2.5 vs 2.0 (error 0.25 < 1 - theta for theta 0.50..0.70: 5/10); route 1/2;
    # object_rel_direction: easy 2/2, medium wrong (C), hard right.
    "vsibench/1": "4", "vsibench/2": "2.5", "vsibench/3": "B", "vsibench/4": "unsure",
    "vsibench/5": "A", "vsibench/6": "B.", "vsibench/7": "A", "vsibench/8": "A",
    # IoUs 1, 1/2 (1 - 2 vs [0, 2]), 0 (no span).
    "charades_sta/c1": "The event happens in 1.0 - 3.0 seconds.", "charades_sta/c2": "From 1 to 2 seconds.",
    "charades_sta/c3": "no idea",
    # backward EPM right, ASI empty -> 50; realtime STU right -> 100; forward REC 1/2, SSR 1/2 -> 50.
    "ovobench/1": "B", "ovobench/2": "", "ovobench/3": "A",
    "ovobench/4/0": "1", "ovobench/4/1": "3", "ovobench/5/0": "No.", "ovobench/5/1": "maybe",
}



def no_items(*dims: str) -> dict[str, float]:
    return {f"{d}_accuracy": float("nan") for d in ("action", "attribute_change", *dims)}


EXPECTED: dict[str, dict[str, float]] = {
    # MVBench, official: the check reads the first word ("" lies inside every "(x)": right; "A or C" reads A: wrong);
    # the leaderboard's Avg is correct / total: (1 + 2) / 5.
    "evr1_mvbench": {"mvbench_accuracy": 60.0},
    "evr1_mvbench_action_sequence": {"mvbench_accuracy": 50.0},
    "evr1_mvbench_object_shuffle": {"mvbench_accuracy": 200 / 3},
    "evr1_tempcompass": {"avg_accuracy": 60.0},
    # Every TempCompass task reports all five dimensions: NaN where it has no item of one.
    "evr1_tempcompass_caption_matching": {"avg_accuracy": 100.0, "order_accuracy": 100.0, **no_items("speed", "direction")},
    "evr1_tempcompass_multi_choice": {"avg_accuracy": 50.0, "direction_accuracy": 100.0, "speed_accuracy": 0.0, **no_items("order")},
    "evr1_tempcompass_yes_no": {"avg_accuracy": 50.0, "direction_accuracy": 100.0, "speed_accuracy": 0.0, **no_items("order")},
    "evr1_video_mmmu": {"mmmu_acc": 100 / 3},
    "evr1_video_mmmu_perception": {"mmmu_acc": 100.0},
    "evr1_video_mmmu_comprehension": {"mmmu_acc": 0.0},
    "evr1_video_mmmu_adaptation": {"mmmu_acc": 0.0},
    # official: the first capital A-E after the prefixes, so "Answer: B" reads the A of "Answer", q2's answer: right
    "evr1_videomathqa_mcq": {"videomathqa_perception_score": 100.0},
    "evr1_videomathqa_mbin": {"videomathqa_perception_score": 50.0},
    # object_rel_direction: the mean of its levels, (easy 100 + medium 0 + hard 100) / 3 (its item mean is 75).
    # object_abs_distance: 2.5 vs 2.0, relative error 0.25 <= 1 - θ for θ = 0.50..0.75: MRA 6/10.
    "evr1_vsibench": {"vsibench_overall": (100 + 60 + 50 + 200 / 3) / 4, "object_counting_mra": 100.0,
                      "object_abs_distance_mra": 60.0, "route_planning_accuracy": 50.0,
                      "object_rel_direction_accuracy": 200 / 3},
    "evr1_charades_sta": {"charades_sta_mIOU": 50.0, "charades_sta_IOU@3": 200 / 3, "charades_sta_IOU@5": 200 / 3,
                          "charades_sta_IOU@7": 100 / 3},
    # the official Total Avg.: the mean of the categories (backward 50, realtime 100, forward 50), not of the 5 tasks (60)
    "evr1_ovobench": {"ovobench_score": 200 / 3},
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


def _shown_text(name: str, doc: dict, record) -> str:
    """The text the stock prompt must show: Charades' caption, OVO-Bench REC's activity or SSR's step."""
    if name == "charades_sta":
        return doc["caption"]
    if doc.get("task") == "REC":
        return doc["activity"]
    if doc.get("task") == "SSR":
        return doc["test_info"][0]["step"]
    return record.problem


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
            shown = _shown_text(name, doc, record)
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


def test_vsibench_direction_levels_keep_their_stock_prompt_and_score_as_one_task(manager: Any, results: dict[str, Any]) -> None:
    """The documents keep the official question_type, which the stock prompt needs; the task's score is the
    mean of the three level means, and the overall score the mean over the four tasks (hand-computed)."""
    from lmms_eval.tasks import get_task_dict

    [task] = _leaf_tasks(get_task_dict(["evr1_vsibench"], manager))
    direction = {d["evr1_id"]: d for d in task.test_docs() if d["evr1_record"]["meta"]["task"] == "object_rel_direction"}
    assert {i: d["question_type"] for i, d in direction.items()} == {
        "vsibench/5": "object_rel_direction_easy", "vsibench/6": "object_rel_direction_easy",
        "vsibench/7": "object_rel_direction_medium", "vsibench/8": "object_rel_direction_hard"}
    text = task.doc_to_text(direction["vsibench/7"])
    assert "Standing by the sofa facing the tv, where is the table?\nOptions:\nA. left\nB. right\nC. back" in text
    got = results["evr1_vsibench"]
    # easy 2/2, medium 0/1, hard 1/1: (1 + 0 + 1) / 3 (the item mean, 3/4, would be wrong).
    assert got["object_rel_direction_accuracy,none"] == pytest.approx(200 / 3)
    # counting 1, distance MRA 0.6 (2.5 vs 2.0: error 0.25 <= 1 - θ for θ = 0.50..0.75), route 1/2, direction 2/3.
    assert got["vsibench_overall,none"] == pytest.approx(100 * (1 + 0.6 + 0.5 + 2 / 3) / 4)


def test_mmvu_reports_the_official_judges_verdicts(bound: tuple[Path, list[Bound]], manager: Any) -> None:
    """The lmms-eval path reports the official protocol: every MMVU item judged with the official prompt."""
    from lmms_eval.evaluator import simple_evaluate

    chat = ScriptedChat({"mmvu/mu1": "B", "mmvu/mu2": "combustion"})
    replies = {"B": '{"extracted_answer": "B", "correct": true}', "combustion": '{"extracted_answer": "x", "correct": false}'}
    with running_verdict_judge(replies) as judge:
        os.environ.update(EVR1_JUDGE_URL=judge.url, EVR1_JUDGE_MODEL="judge")
        try:
            out = simple_evaluate(model=chat, tasks=["evr1_mmvu"], task_manager=manager, log_samples=True)
        finally:
            for key in ("EVR1_JUDGE_URL", "EVR1_JUDGE_MODEL"):
                os.environ.pop(key)
    official = [b for b in judge.requests if b not in verdict_requests(judge)]
    assert len(official) == 2 and len(verdict_requests(judge)) == 1  # evr1's judge asks about the open-ended item only
    assert out["results"]["evr1_mmvu"]["accuracy,none"] == pytest.approx((100 + 0) / 2)  # the official verdicts


def test_mmvu_without_a_judge_fails_before_generation(manager: Any) -> None:
    from lmms_eval.evaluator import simple_evaluate

    chat = ScriptedChat({})
    with pytest.raises(ConfigError, match="'mmvu' has an official scorer that judges every answer with an LLM judge: set"
                                          " EVR1_JUDGE_URL"):
        simple_evaluate(model=chat, tasks=["evr1_mmvu"], task_manager=manager)
    assert chat.asked == []


CAPTIONING = [  # the fields of lmms-eval/TempCompass `captioning` rows (texts ours)
    {"video_id": "t1", "dim": "speed", "question": "Describe the speed of the square.", "answer": "It moves slowly.",
     "mc_question": "How fast does the square move?\nA. slowly\nB. fast", "mc_answer": "A. slowly"},
    {"video_id": "t1", "dim": "direction", "question": "Describe the direction of the square.", "answer": "To the right.",
     "mc_question": "Which way does the square move?\nA. left\nB. right", "mc_answer": "B. right"},
]


@pytest.fixture(scope="module")
def captioning(tmp_path_factory: pytest.TempPathFactory, lmms_env: Path) -> Any:
    """TempCompass with two official captioning rows, bound to its own tasks folder; its TaskManager."""
    from lmms_eval.tasks import TaskManager

    root, out = tmp_path_factory.mktemp("tempcompass-captioning"), tmp_path_factory.mktemp("tempcompass-tasks")
    write_fixtures(root, ["tempcompass"])  # ids from the rows' positions: t1/1 and t1/2
    (root / "tempcompass" / "questions" / "captioning.json").write_text(json.dumps(CAPTIONING, indent=1), encoding="utf-8")
    bind(root, out, ["tempcompass"])
    return TaskManager(include_path=[str(out)], include_defaults=False)


def test_tempcompass_captioning_without_the_judge_key_fails_before_generation(captioning: Any) -> None:
    from lmms_eval.evaluator import simple_evaluate

    chat = ScriptedChat({})
    with pytest.raises(ConfigError, match="'tempcompass/captioning/t1/1' needs the stock LLM judge: set OPENAI_API_KEY"):
        simple_evaluate(model=chat, tasks=["evr1_tempcompass_captioning"], task_manager=captioning)
    assert chat.asked == []


def test_tempcompass_captioning_judge_failure_is_raised_once_naming_the_item(captioning: Any, judge: Any,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The stock judge (10 retries of its own) gets no usable reply for the judged caption: the run fails
    at aggregation naming it, without lmms-eval's 5 retries of process_results (11 judge calls, not 55)."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks.tempcompass import utils as stock

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr(stock, "API_URL", f"{judge.url}/chat/completions")
    monkeypatch.setattr(stock, "time", SimpleNamespace(sleep=lambda seconds: None))  # its retry pauses
    judge.reply, judge.usage = "", None  # an empty reply without `usage`: the stock judge gives rating -1
    chat = ScriptedChat({"tempcompass/captioning/t1/1": "The square moves slowly.", "tempcompass/captioning/t1/2": ""})
    with pytest.raises(Evr1Error, match=r"judge gave no answer for 1 item\(s\) \(tempcompass/captioning/t1/1\)"):
        simple_evaluate(model=chat, tasks=["evr1_tempcompass_captioning"], task_manager=captioning)
    assert sorted(chat.asked) == ["tempcompass/captioning/t1/1", "tempcompass/captioning/t1/2"]
    assert len(judge.requests) == 11  # the empty caption is not judged
    prompt = judge.requests[0]["messages"][-1]["content"]
    assert "Video Description:The square moves slowly." in prompt and CAPTIONING[0]["mc_question"] in prompt


def test_tempcompass_captioning_from_an_easyvideor1_row_names_the_record() -> None:
    row = {"problem": "Describe the speed of the square.", "problem_type": "open_ended", "solution": "It moves slowly.",
           "path": "t1.mp4"}
    record = Record(id="tempcompass/cap-7", problem=row["problem"], problem_type="open_ended", answer=row["solution"],
                    media=[{"kind": "video", "path": "tempcompass/videos/t1.mp4"}],
                    meta={"format": "captioning", "dimension": "speed"})
    with pytest.raises(ValueError, match="TempCompass captioning record tempcompass/cap-7 has no mc_question or mc_answer"):
        BENCHMARKS.get("tempcompass").lmms_doc(record, row)


def test_tempcompass_caption_matching_gives_the_stock_prompt_the_published_question() -> None:
    """The official question verbatim (the stock prompt is the question as published); from an EasyVideoR1
    row, whose options are in the record only, caption lines like the official ones."""
    record = Record(id="tempcompass/cm-1", problem="Which description is a more suitable match for the video?",
                    problem_type="multiple_choice", answer="B",
                    options=["The man is dribbling a basketball.", "A man is dunking a basketball."],
                    media=[{"kind": "video", "path": "tempcompass/videos/t1.mp4"}],
                    meta={"format": "caption_matching", "dimension": "action"})
    published = {"video_id": "t1", "dim": "action", "answer": "Option 2: A man is dunking a basketball.",
                 "question": "Which description is a more suitable match for the video?\n"
                             "Option 1: The man is dribbling a basketball.\nOption 2: A man is dunking a basketball."}
    doc = BENCHMARKS.get("tempcompass").lmms_doc(record, published)
    assert (doc["question"], doc["answer"]) == (published["question"], published["answer"])
    easyvideor1 = {"problem": record.problem, "problem_type": "multiple_choice", "solution": "B", "path": "t1.mp4"}
    doc = BENCHMARKS.get("tempcompass").lmms_doc(record, easyvideor1)
    assert doc["question"] == ("Which description is a more suitable match for the video?\n"
                               "Caption A: The man is dribbling a basketball.\nCaption B: A man is dunking a basketball.")
    assert doc["answer"] == "Caption B: A man is dunking a basketball."


def test_tempcompass_captioning_is_judged_by_the_stock_judge(captioning: Any, judge: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge picks the right option from the first caption (rating 1); the empty caption is wrong
    without a judge call: 50 overall, speed 100, direction 0."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks.tempcompass import utils as stock

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr(stock, "API_URL", f"{judge.url}/chat/completions")
    judge.reply = "Reasoning: the description says the square moves slowly.\nAnswer: A. slowly"
    chat = ScriptedChat({"tempcompass/captioning/t1/1": "The square moves slowly.", "tempcompass/captioning/t1/2": ""})
    out = simple_evaluate(model=chat, tasks=["evr1_tempcompass_captioning"], task_manager=captioning)
    got = out["results"]["evr1_tempcompass_captioning"]
    assert got["avg_accuracy,none"] == pytest.approx(50.0)
    assert got["speed_accuracy,none"] == pytest.approx(100.0) and got["direction_accuracy,none"] == pytest.approx(0.0)
    assert len(judge.requests) == 1


@pytest.mark.parametrize(
    ("row", "field", "text"),
    [
        ({"problem_type": "REC", "problem": "How many times did they breaking something?"}, "activity", "breaking something"),
        ({"problem_type": "SSR", "problem": "put on the hair extensions"}, "step", "put on the hair extensions"),
        ({"problem_type": "CRR", "problem": "What does she do to the car?"}, "question", "What does she do to the car?"),
    ],
)
def test_ovobench_easyvideor1_probes_reach_the_stock_prompt_unworded(tmp_path: Path, row: dict, field: str, text: str) -> None:
    """The stock OVO-Bench prompt words the activity/step/question itself: it must get them bare, not our wording."""
    full = {"data_type": "video", "path": "p.mp4", "solution": "<answer>1</answer>", "problem_id": "ovo_7_0",
            "ovo_task": row["problem_type"], "ovo_category": "forward", "options": [], **row}
    (tmp_path / "ovobench").mkdir()
    (tmp_path / "ovobench" / "ovo_bench_new.json").write_text(json.dumps([full]), encoding="utf-8")
    (record,) = BENCHMARKS.get("ovobench").load(tmp_path)
    assert text in record.problem and record.problem != text  # evr1's own prompt carries the official instruction
    doc = BENCHMARKS.get("ovobench").lmms_doc(record, full)
    shown = doc["test_info"][0]["step"] if field == "step" else doc[field]
    assert shown == text


def test_ovobench_group_is_the_plain_mean_of_its_categories() -> None:
    """The group's "Total Avg." is the categories' plain mean: 50 and 80 give 65, whatever their sample counts."""
    from evr1.eval.benchmarks.ovobench import ovobench_total

    assert ovobench_total([50.0, 80.0], [100, 1], True) == pytest.approx(65.0)
    assert ovobench_total([50.0, 100.0, 50.0], [3, 1, 2], False) == pytest.approx(200 / 3)
