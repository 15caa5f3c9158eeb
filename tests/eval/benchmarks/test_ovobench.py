"""OVO-Bench: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evr1.data.records import RecordError
from evr1.eval.api import evaluate
from evr1.eval.benchmarks.ovobench import ovobench_item
from evr1.eval.eval_prompt import eval_question_text
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec

from ..rows import both, check_same, sample_row, score_strict, write_files, write_json


@pytest.mark.parametrize(("answer", "ptype", "response", "score"), [
    ("B", "multiple_choice", "B", 1.0), ("B", "multiple_choice", "Because of the car", 1.0),  # "B" appears
    ("B", "multiple_choice", "b", 0.0), ("B", "multiple_choice", None, 0.0),
    (3, "numerical", "3", 1.0), (3, "numerical", "I count 3 times", 1.0), (3, "numerical", "3 or 4", 0.0),
    (3, "numerical", "three", 0.0),
    ("yes", "boolean", "Yes, it is", 1.0), ("yes", "boolean", "Y", 1.0), ("yes", "boolean", "yes", 0.0),
    ("no", "boolean", "N", 1.0), ("no", "boolean", "No.", 1.0), ("no", "boolean", "Not yet", 1.0),  # "No" in "Not"
])
def test_ovobench_readers(answer: Any, ptype: str, response: str | None, score: float) -> None:
    assert ovobench_item(sample_row(answer, response, ptype=ptype)) == score


def test_ovobench_total_is_the_mean_of_the_categories() -> None:
    """OVOBenchScore.py since f3911d7 (HEAD c34093f, l. 133): (backward + realtime + forward) / 3, each the mean of its
    tasks' accuracies; before it, the mean over all the tasks (here 62.5, kept as `task_mean`)."""
    rows = [sample_row("A", "A", 1, category="backward", task="EPM"), sample_row("A", "B", 0, category="backward", task="ASI"),
            sample_row("A", "A", 1, category="realtime", task="STU"),
            sample_row(2, "2", 1, "numerical", category="forward", task="REC"), sample_row(2, "5", 0, "numerical", category="forward", task="REC")]
    official, strict = both("ovobench", rows)
    assert official["score"] == pytest.approx((50 + 100 + 50) / 3) == official["metrics"]["Total Avg."]
    assert official["metrics"]["task_mean"] == pytest.approx((100 + 0 + 100 + 50) / 4)  # 62.5: over the 4 tasks
    assert official["metrics"]["backward"] == 50.0 and official["metrics"]["forward"] == 50.0
    assert strict["score"] == pytest.approx((50 + 100 + 50) / 3)


HAIR = "pull up the hair to reserve place for the hair extensions"


CAR = "The woman in a black coat walks towards the direction of the black car, what action does she take to the car?"


OVO_ROWS: list[dict[str, Any]] = [
    {"id": 0, "task": "EPM", "video": "Ego4D/clips/ec4a3ba3.mp4", "realtime": 215,
     "question": "Who did I communicate to  when chopping egg plants?", "answer": "a person with blue shirt",
     "options": ["a person with brown shirt", "a person with green shirt", "a person with blue shirt", "a person with white shirt"],
     "gt": 2},
    {"id": 1468, "task": "CRR", "video": "MovieNet/tt0048028.mp4", "question": CAR, "answer": "She walks past the car.",
     "ask_time": 297, "clue_time": 308, "test_info": [{"realtime": 297, "type": 0}, {"realtime": 310, "type": 1}]},
    {"id": 1516, "task": "SSR", "video": "COIN/xZecGPPhbHE.mp4", "tutorial": "PutOnHairExtensions",
     "all_steps": [HAIR, "put on the hair extensions", "put down the hair and comb"],
     "start_time": [25, 31, 107], "end_time": [30, 49, 117],
     "test_info": [{"realtime": 27, "step": HAIR, "type": 1}, {"realtime": 26, "step": "put on the hair extensions", "type": 0}]},
    {"id": 1558, "task": "REC", "video": "perception_test/video_4017.mp4", "activity": "breaking something",
     "start_times": [6], "end_times": [17], "test_info": [{"realtime": 17, "count": 1}, {"realtime": 32.0, "count": 1}]},
]


@pytest.fixture
def ovo_root(tmp_path: Path) -> Path:
    write_json(tmp_path, "ovobench/ovo_bench_new.json", OVO_ROWS)
    return tmp_path


def test_ovobench_forward_rows_become_one_probe_each(ovo_root: Path) -> None:
    records = {r.id: r for r in BENCHMARKS.get("ovobench").load(ovo_root)}
    expected = {  # id: (task, problem type, answer, clip end)
        "ovobench/0": ("EPM", "multiple_choice", "C", 215.0),
        "ovobench/1468/0": ("CRR", "boolean", "no", 297.0), "ovobench/1468/1": ("CRR", "boolean", "yes", 310.0),
        "ovobench/1516/0": ("SSR", "boolean", "yes", 27.0), "ovobench/1516/1": ("SSR", "boolean", "no", 26.0),
        "ovobench/1558/0": ("REC", "numerical", 1, 17.0), "ovobench/1558/1": ("REC", "numerical", 1, 32.0),
    }
    videos = {str(row["id"]): row["video"] for row in OVO_ROWS}
    assert sorted(records) == sorted(expected)
    for rid, (task, ptype, answer, end) in expected.items():
        r = records[rid]
        assert (r.meta["task"], r.problem_type.value, r.answer, r.media[0].start, r.media[0].end) == (task, ptype, answer, 0.0, end), rid
        assert r.media[0].path == f"ovobench/src_videos/{videos[rid.split('/')[1]]}"


def test_ovobench_probe_prompts_carry_the_official_tasks(ovo_root: Path) -> None:
    records = {r.id: r for r in BENCHMARKS.get("ovobench").load(ovo_root)}
    ssr = eval_question_text(records["ovobench/1516/1"])
    assert "\nput on the hair extensions\n" in ssr and HAIR not in ssr  # each probe asks about its own step
    assert "right now, at the end of the video?" in ssr and ssr.endswith("Answer yes or no.")
    crr = eval_question_text(records["ovobench/1468/0"])
    assert f"\n{CAR}\n" in crr and "enough information to answer it?" in crr and crr.endswith("Answer yes or no.")
    rec = eval_question_text(records["ovobench/1558/0"])
    assert "breaking something." in rec and "one complete motion counts as one" in rec
    assert rec.endswith("Answer with a single number.")


def test_ovobench_scores_by_the_official_nesting(ovo_root: Path, tmp_path: Path) -> None:
    # EPM right -> backward 100. Forward: CRR 1/2, SSR 2/2, REC 0/2 -> (50 + 100 + 0) / 3 = 50. Overall (100 + 50) / 2.
    responses = {"ovobench/0": "C", "ovobench/1468/0": "no", "ovobench/1468/1": "no", "ovobench/1516/0": "Yes",
                 "ovobench/1516/1": "no", "ovobench/1558/0": "2", "ovobench/1558/1": ""}
    result = evaluate(EvalSpec(protocol="strict"), ScriptedResponder(responses), tmp_path / "run", benchmarks=["ovobench"],
                      data_root=ovo_root)
    got = result["benchmarks"]["ovobench"]
    assert got["score"] == pytest.approx(75.0)
    # official (OVOBenchScore.py): "no" is not "No" (CRR 0/2, SSR 1/2); the total is the mean of the 2 categories
    official = got["protocols"]["official"]
    assert {k: v["score"] for k, v in official["breakdowns"]["task"].items()} == pytest.approx(
        {"EPM": 100.0, "CRR": 0.0, "SSR": 50.0, "REC": 0.0})
    assert official["score"] == pytest.approx((100 + 50 / 3) / 2) and official["metrics"]["task_mean"] == pytest.approx(
        37.5)
    assert got["metrics"]["backward"] == pytest.approx(100.0) and got["metrics"]["forward"] == pytest.approx(50.0)
    assert {k: v["score"] for k, v in got["breakdowns"]["task"].items()} == pytest.approx(
        {"EPM": 100.0, "CRR": 50.0, "SSR": 100.0, "REC": 0.0})
    assert got["n"] == 7


@pytest.mark.parametrize(("row", "field"), [
    ({**OVO_ROWS[2], "test_info": [{"realtime": 27, "type": 1}]}, "step"),
    ({k: v for k, v in OVO_ROWS[3].items() if k != "activity"}, "activity"),
])
def test_ovobench_forward_row_without_its_field_is_named(tmp_path: Path, row: dict[str, Any], field: str) -> None:
    write_json(tmp_path, "ovobench/ovo_bench_new.json", [row])
    with pytest.raises(RecordError, match=f"ovo_bench_new.json:1: field '{field}'"):
        BENCHMARKS.get("ovobench").load(tmp_path)


OVO_OFFICIAL = [
    {"id": 0, "task": "EPM", "video": "Ego4D/clips/ec4a3ba3.mp4", "realtime": 215, "question": "Who did I talk to?",
     "answer": "blue", "options": ["brown", "green", "blue", "white"], "gt": 2},
    {"id": 1468, "task": "CRR", "video": "MovieNet/tt0048028.mp4", "question": CAR, "answer": "She walks past the car.",
     "ask_time": 297, "clue_time": 308, "test_info": [{"realtime": 297, "type": 0}, {"realtime": 310, "type": 1}]},
    {"id": 1516, "task": "SSR", "video": "COIN/xZecGPPhbHE.mp4", "tutorial": "PutOnHairExtensions",
     "all_steps": [HAIR, "put on the hair extensions"], "start_time": [25, 31], "end_time": [30, 49],
     "test_info": [{"realtime": 27, "step": HAIR, "type": 1}, {"realtime": 26, "step": "put on the hair extensions", "type": 0}]},
    {"id": 1558, "task": "REC", "video": "perception_test/video_4017.mp4", "activity": "breaking something",
     "start_times": [6], "end_times": [17], "test_info": [{"realtime": 17, "count": 1}, {"realtime": 32.0, "count": 1}]},
]


def _ovo(pid: str, task: str, category: str, problem: str, answer: str, options: list[str], **fields: Any) -> dict[str, Any]:
    ptype = "multiple choice" if options else task
    return {"data_type": "video", "data_source": "OVO-Bench", "problem_type": ptype, "problem": problem, "options": options,
            "path": f"{pid.removeprefix('ovo_')}.mp4", "solution": f"<answer>{answer}</answer>", "problem_id": pid,
            "ovo_task": task, "ovo_category": category, **fields}


OVO_EASY = [
    _ovo("ovo_0", "EPM", "backward", "Who did I talk to?", "C", ["A: brown", "B: green", "C: blue", "D: white"], ovo_id=0),
    _ovo("ovo_1468_0", "CRR", "forward", CAR, "No", [], ovo_id=1468, ovo_test_idx=0, ovo_type=0),
    _ovo("ovo_1468_1", "CRR", "forward", CAR, "Yes", [], ovo_id=1468, ovo_test_idx=1, ovo_type=1),
    _ovo("ovo_1516_0", "SSR", "forward", HAIR, "Yes", [], ovo_id=1516, ovo_test_idx=0, ovo_type=1),
    _ovo("ovo_1516_1", "SSR", "forward", "put on the hair extensions", "No", [], ovo_id=1516, ovo_test_idx=1, ovo_type=0),
    _ovo("ovo_1558_0", "REC", "forward", "How many times did they breaking something?", "1", [], ovo_id=1558, ovo_test_idx=0),
    _ovo("ovo_1558_1", "REC", "forward", "How many times did they breaking something?", "1", [], ovo_id=1558, ovo_test_idx=1),
]


# probe -> (official id, EasyVideoR1 id, response): EPM right; CRR 1/2; SSR 2/2; REC 0/2.
OVO_ANSWERS = [("0", "0", "C"), ("1468/0", "1468_0", "no"), ("1468/1", "1468_1", "no"), ("1516/0", "1516_0", "yes"),
               ("1516/1", "1516_1", "no"), ("1558/0", "1558_0", "2"), ("1558/1", "1558_1", "")]


def test_ovobench_easyvideor1_forward_rows_score_and_read_as_the_official(tmp_path: Path) -> None:
    """backward 100; forward (CRR 50 + SSR 100 + REC 0) / 3 = 50; overall 75, from either format."""
    official_root = write_files(tmp_path / "o", {"ovobench/ovo_bench_new.json": OVO_OFFICIAL})
    easy_root = write_files(tmp_path / "e", {"ovobench/ovo_bench_new.json": OVO_EASY})
    got_official = score_strict(official_root, "ovobench", {f"ovobench/{o}": r for o, _, r in OVO_ANSWERS})
    got_easy = score_strict(easy_root, "ovobench", {f"ovobench/ovo_bench_new/ovo_{e}": r for _, e, r in OVO_ANSWERS})
    check_same(got_official, got_easy, 75.0)
    assert got_easy["metrics"]["forward"] == pytest.approx(50.0)
    official = {r.id.removeprefix("ovobench/"): r for r in BENCHMARKS.get("ovobench").load(official_root)}
    easy = {r.id.removeprefix("ovobench/ovo_bench_new/ovo_"): r for r in BENCHMARKS.get("ovobench").load(easy_root)}
    for o, e, _ in OVO_ANSWERS:  # the same question, type and answer; the clip is EasyVideoR1's pre-cut file
        assert eval_question_text(easy[e]) == eval_question_text(official[o]), e
        assert (easy[e].problem_type, easy[e].answer) == (official[o].problem_type, official[o].answer), e
    assert easy["1516_1"].media[0].path == "ovobench/1516_1.mp4" and easy["1516_1"].media[0].end is None


def test_ovobench_easyvideor1_rec_row_without_its_activity_is_named(tmp_path: Path) -> None:
    row = {**OVO_EASY[5], "problem": "Count the breaking."}
    write_files(tmp_path, {"ovobench/ovo_bench_new.json": [row]})
    with pytest.raises(RecordError, match="ovo_bench_new.json:2: field 'problem'.*How many times did they <activity>"):
        BENCHMARKS.get("ovobench").load(tmp_path)

