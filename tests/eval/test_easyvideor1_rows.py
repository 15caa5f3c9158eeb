"""EasyVideoR1's converted rows score as the official rows of the same items: same headline, same breakdowns.

Each case gives a few items twice, as the benchmark's official rows and as EasyVideoR1's `eval/data/valid_data`
rows (github.com/cyuQ1n/EasyVideoR1, commit 7ab338b; shapes copied from those files, texts shortened), with the
same right and wrong answers, and a hand-computed headline both must reach through `evr1.eval.api.evaluate`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evr1.data.records import RecordError
from evr1.eval.api import evaluate
from evr1.eval.eval_prompt import eval_question_text
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec


def _write(root: Path, files: dict[str, Any]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(json.dumps(r) for r in content) if path.suffix == ".jsonl" else json.dumps(content, indent=1)
        path.write_text(text, encoding="utf-8")
    return root


def _score(root: Path, name: str, answers: dict[str, str], judge: JudgeSpec | None = None) -> dict[str, Any]:
    responder = ScriptedResponder(answers)
    # the strict headline: these tests compare importers (official rows vs EasyVideoR1's), under evr1's rules
    spec = EvalSpec(protocol="strict", **({"judge": judge} if judge is not None else {}))
    got = evaluate(spec, responder, root / "run", benchmarks=[name], data_root=root)["benchmarks"][name]
    assert sorted(responder.asked) == sorted(answers)  # every record answered, none left to the default
    return got


def check_same(official: dict[str, Any], easy: dict[str, Any], score: float) -> None:
    assert official["score"] == pytest.approx(score) and easy["score"] == pytest.approx(score)
    assert easy["metrics"] == pytest.approx(official["metrics"])
    assert easy["breakdowns"] == official["breakdowns"]
    assert easy["n"] == official["n"]


def _evr1(pid: Any, problem: str, options: list[str] | None, answer: str, path: str, ptype: str = "multiple choice",
          **fields: Any) -> dict[str, Any]:
    return {"problem_id": pid, "problem": problem, "data_type": "video", "problem_type": ptype, "options": options,
            "solution": f"<answer>{answer}</answer>", "path": path, **fields}


# -- VideoMathQA: one MCQ row and four binary rows per question, all sharing `problem_id` ----------------------------

VMQ = {"A": ("2584897a-267", "Counting", "long"), "B": ("f93445c3-75", "Chart", "short")}
FIVE = ["A. 24", "B. 28", "C. 30", "D. 12", "E. 18"]


def _vmq_official() -> dict[str, Any]:
    mcq = [{"question_id": qid, "videoID": qid[:8], "question": f"Q {key}?", "options": FIVE, "answer": "B",
            "category": cat, "duration": dur} for key, (qid, cat, dur) in VMQ.items()]
    mbin = [{"question_id": qid, "pair": p, "videoID": qid[:8], "question": f"Q {key}?", "options": ["A. 28", "B. 30"],
             "answer": "A", "category": cat, "duration": dur} for key, (qid, cat, dur) in VMQ.items() for p in range(4)]
    return {"videomathqa/mcq.json": mcq, "videomathqa/mbin.json": mbin}


def _vmq_easy() -> dict[str, Any]:
    rows = []
    for key, (qid, cat, dur) in VMQ.items():
        common = {"video_id": qid[:8], "data_source": "VideoMathQA", "category": cat, "length": dur, "steps": "{}"}
        rows.append(_evr1(qid, f"Q {key}?", FIVE, "B", f"./videos/{qid[:8]}.mp4", **common))
        n = qid.rsplit("-", 1)[1]
        rows += [_evr1(qid, f"Q {key}?", ["A. 28", "B. 30"], "A", f"./videos/{qid[:8]}.mp4", mbinary_id=int(f"{n}{p + 1}"), **common)
                 for p in range(4)]
    return {"videomathqa/videomathqa.jsonl": rows}


def test_videomathqa_easyvideor1_rows_score_as_the_official(tmp_path: Path) -> None:
    """A: MCQ right, 4/4 pairs right; B: MCQ wrong, 3/4 pairs right -> MBin 50 (B fails), MCQ 50."""
    (a, _, _), (b, _, _) = VMQ.values()
    official = {f"videomathqa/mcq/{a}": "B", f"videomathqa/mcq/{b}": "C",
                **{f"videomathqa/mbin/{a}/{p}": "A" for p in range(4)},
                **{f"videomathqa/mbin/{b}/{p}": "A" if p else "B" for p in range(4)}}
    easy = {f"videomathqa/videomathqa/{a}": "B", f"videomathqa/videomathqa/{b}": "C",
            **{f"videomathqa/videomathqa/{a}/267{p + 1}": "A" for p in range(4)},
            **{f"videomathqa/videomathqa/{b}/75{p + 1}": "A" if p else "B" for p in range(4)}}
    got_official = _score(_write(tmp_path / "o", _vmq_official()), "videomathqa", official)
    got_easy = _score(_write(tmp_path / "e", _vmq_easy()), "videomathqa", easy)
    check_same(got_official, got_easy, 50.0)
    assert got_easy["metrics"]["MCQ"] == 50.0 and got_easy["metrics"]["mbin_questions"] == 2.0
    assert {k: v["score"] for k, v in got_easy["breakdowns"]["category (MBin)"].items()} == {"Counting": 100.0, "Chart": 0.0}


# -- OVO-Bench: forward probes as rows of their own (problem_type REC, SSR, CRR) on pre-cut clips ---------------------

CAR = "The woman in a black coat walks towards the direction of the black car, what action does she take to the car?"
HAIR = "pull up the hair to reserve place for the hair extensions"
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
    official_root = _write(tmp_path / "o", {"ovobench/ovo_bench_new.json": OVO_OFFICIAL})
    easy_root = _write(tmp_path / "e", {"ovobench/ovo_bench_new.json": OVO_EASY})
    got_official = _score(official_root, "ovobench", {f"ovobench/{o}": r for o, _, r in OVO_ANSWERS})
    got_easy = _score(easy_root, "ovobench", {f"ovobench/ovo_bench_new/ovo_{e}": r for _, e, r in OVO_ANSWERS})
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
    _write(tmp_path, {"ovobench/ovo_bench_new.json": [row]})
    with pytest.raises(RecordError, match="ovo_bench_new.json:2: field 'problem'.*How many times did they <activity>"):
        BENCHMARKS.get("ovobench").load(tmp_path)


# -- MVBench: one file, the task from the problem id's block of 200 (checked against the video folder) ---------------

THREE = ["A. Not sure", "B. Scattering something down", "C. Piling something up"]


def _mvbench_official() -> dict[str, Any]:
    row = {"question": "What is the action?", "candidates": [t[3:] for t in THREE]}
    return {"mvbench/json/action_antonym.json": [{**row, "video": "166583.webm", "answer": "Piling something up"},
                                                 {**row, "video": "166584.webm", "answer": "Not sure"}],
            "mvbench/json/action_sequence.json": [{"video": "AJTDO.mp4", "question": "What happened after?",
                                                   "candidates": ["sat", "ran"], "answer": "ran", "start": 0.0, "end": 11.375}]}


def _mvbench_easy(sequence_path: str = "./star/Charades_v1_480/AJTDO.mp4") -> dict[str, Any]:
    common = {"original_question_type": "", "subtitle": ""}
    return {"mvbench/json/mvbench.json": [
        {"video": "166583.webm", **_evr1(1, "What is the action?", THREE, "C", "./ssv2_video/166583.mp4", **common)},
        {"video": "166584.webm", **_evr1(2, "What is the action?", THREE, "A", "./ssv2_video/166584.mp4", **common)},
        {"video": "AJTDO.mp4", **_evr1(801, "What happened after?", ["A. sat", "B. ran"], "B", sequence_path, **common),
         "start": 0.0, "end": 11.375},
    ]}


def test_mvbench_easyvideor1_rows_score_the_official_task_mean(tmp_path: Path) -> None:
    """action_antonym 1/2 -> 50, action_sequence 1/1 -> 100: task mean 75 (strict); the leaderboard's Avg, correct /
    total, 2/3 (official)."""
    got_official = _score(_write(tmp_path / "o", _mvbench_official()), "mvbench",
                          {"mvbench/action_antonym/1": "C", "mvbench/action_antonym/2": "B", "mvbench/action_sequence/1": "B"})
    easy_root = _write(tmp_path / "e", _mvbench_easy())
    got_easy = _score(easy_root, "mvbench", {"mvbench/mvbench/1": "C", "mvbench/mvbench/2": "B", "mvbench/mvbench/801": "B"})
    check_same(got_official["protocols"]["strict"], got_easy["protocols"]["strict"], 75.0)
    check_same(got_official["protocols"]["official"], got_easy["protocols"]["official"], 200 / 3)
    clip = BENCHMARKS.get("mvbench").load(easy_root)[2].media[0]
    assert (clip.path, clip.start, clip.end) == ("mvbench/star/Charades_v1_480/AJTDO.mp4", 0.0, 11.375)


def test_mvbench_easyvideor1_row_whose_folder_contradicts_its_block_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, _mvbench_easy(sequence_path="./ssv2_video/AJTDO.mp4"))
    with pytest.raises(RecordError, match=r"field 'task'.*'mvbench/mvbench/801'.*'action_sequence'.*under star/") as caught:
        BENCHMARKS.get("mvbench").load(tmp_path)
    assert "original_question_type" in str(caught.value) and "json/<task>.json" in str(caught.value)


# -- MLVU: EasyVideoR1's rows cannot tell the task ---------------------------------------------------------------------


def test_mlvu_easyvideor1_rows_are_refused_with_the_way_out(tmp_path: Path) -> None:
    row = {"data_type": "video", "data_source": "MLVU", "problem_type": "multiple choice", "path": "./video/needle_32.mp4",
           "problem": "What does the hand do?", "problem_id": 1, "options": ["A. a", "B. b", "C. c", "D. d"],
           "solution": "<answer>A</answer>"}
    _write(tmp_path, {"mlvu/json/mlvu-dev.json": [row]})
    with pytest.raises(RecordError, match="mlvu-dev.json:2: field 'task'") as caught:
        BENCHMARKS.get("mlvu").load(tmp_path)
    assert "cannot tell it" in str(caught.value) and "use the official json/<n>_<task>.json" in str(caught.value)


# -- VSI-Bench -----------------------------------------------------------------------------------------------------------

DIRS = ["front-left", "back-right", "back-left", "front-right"]


def test_vsibench_easyvideor1_rows_score_as_the_official(tmp_path: Path) -> None:
    """object_counting: "4" for 4 (MRA 1), "4.5" for 4 (|4.5-4|/4 = 0.125 < 1-θ for θ = .50..85: MRA 0.8) -> 90;
    object_rel_direction: easy right, hard wrong -> (100 + 0) / 2 = 50. Task mean (90 + 50) / 2 = 70."""
    items = [(0, "object_counting", None, "4"), (1, "object_counting", None, "4"),
             (2, "object_rel_direction_easy", DIRS, "A"), (3, "object_rel_direction_hard", DIRS, "A")]
    official = [{"id": i, "dataset": "arkitscenes", "scene_name": "41069025", "question_type": q, "question": f"Q{i}?",
                 "options": [f"{'ABCD'[k]}. {d}" for k, d in enumerate(o)] if o else None, "ground_truth": a}
                for i, q, o, a in items]
    easy = [_evr1(i, f"Q{i}?", [f"{'ABCD'[k]}. {d}" for k, d in enumerate(o)] if o else None, a, "./arkitscenes/41069025.mp4",
                  "multiple choice" if o else "regression", original_question_type=q, process="", data_source="VSIBench")
            for i, q, o, a in items]
    responses = ["4", "4.5", "A", "B"]
    got_official = _score(_write(tmp_path / "o", {"vsibench/test.json": official}), "vsibench",
                          {f"vsibench/{i}": r for i, r in enumerate(responses)})
    got_easy = _score(_write(tmp_path / "e", {"vsibench/test.json": easy}), "vsibench",
                      {f"vsibench/test/{i}": r for i, r in enumerate(responses)})
    check_same(got_official, got_easy, 70.0)


# -- Charades-STA: the span inside <think> ---------------------------------------------------------------------------


def test_charades_easyvideor1_rows_score_as_the_official(tmp_path: Path) -> None:
    """IoU 0.5 ([24, 27] in [24, 30]) and 1.0: mIoU 75, R@0.3 100, R@0.5 100, R@0.7 50."""
    spans = [("3MSZA", "person turn a light on.", [24.0, 30.0]), ("AO8RW", "a person is putting a book on a shelf.", [0.0, 6.9])]
    official = [{"video": f"{v}.mp4", "caption": c, "timestamp": t, "duration": 30.0} for v, c, t in spans]
    placeholder = "<[PLHD21_never_used_51bce0c785ca2f68081bfa7d91973934]>"
    easy = [{"data_type": "video", "data_source": "charades_sta", "problem_type": "temporal grounding", "path": f"{v}.mp4",
             "problem": c, "problem_id": i, "options": [],
             "solution": f"<think>{json.dumps({'time': t, 'boxes': {}})}</think>{placeholder}"} for i, (v, c, t) in enumerate(spans)]
    responses = ["[24, 27]", "[0, 6.9]"]
    official_root = _write(tmp_path / "o", {"charades_sta/charades_test.json": official})
    easy_root = _write(tmp_path / "e", {"charades_sta/charades_test.json": easy})
    got_official = _score(official_root, "charades_sta", {f"charades_sta/{v}/{i + 1}": r for i, ((v, _, _), r) in enumerate(zip(spans, responses))})
    got_easy = _score(easy_root, "charades_sta", {f"charades_sta/charades_test/{i}": r for i, r in enumerate(responses)})
    check_same(got_official, got_easy, 75.0)
    assert got_easy["metrics"]["R@0.7"] == 50.0
    a, b = BENCHMARKS.get("charades_sta").load(official_root)[0], BENCHMARKS.get("charades_sta").load(easy_root)[0]
    assert (eval_question_text(b), b.answer) == (eval_question_text(a), a.answer)


# -- LiveSports-3K QA: problem ids shared by questions of different types ---------------------------------------------


def test_livesports_easyvideor1_rows_with_a_shared_problem_id_load_and_score(tmp_path: Path) -> None:
    """Who right, What wrong, When right: 66.67; by type Who 100, What 0, When 100."""
    items = [("Who", "Who spins?"), ("What", "What did the bullfighter do?"), ("When", "When is the bow explained?")]
    opts = ["A: x", "B: y", "C: z", "D: w"]
    official = [{"video_id": "zECsM6q9Nik", "question_id": f"q{i}", "q_type": t, "OCR": 0, "question": q, "options": opts,
                 "answer": "B", "video_start": 4.668, "video_end": 31.422} for i, (t, q) in enumerate(items)]
    pids = ["zECsM6q9Nik_e2_q1", "zECsM6q9Nik_e2_q1", "zECsM6q9Nik_e3_q1"]
    easy = [_evr1(pid, q, opts, "B", "ytb_zECsM6q9Nik_4.668_31.422.mp4", data_source="LiveSports-3K-QA",
                  q_type_livesports=t, ocr_livesports=0) for pid, (t, q) in zip(pids, items)]
    responses = ["B", "A", "B"]
    got_official = _score(_write(tmp_path / "o", {"livesports3k/qa.json": official}), "livesports3k_qa",
                          {f"livesports3k_qa/q{i}": r for i, r in enumerate(responses)})
    got_easy = _score(_write(tmp_path / "e", {"livesports3k/qa.json": easy}), "livesports3k_qa",
                      {f"livesports3k_qa/qa/{pid}/{t}": r for pid, (t, _), r in zip(pids, items, responses)})
    check_same(got_official, got_easy, 200 / 3)
    assert {k: v["score"] for k, v in got_easy["breakdowns"]["category"].items()} == {"Who": 100.0, "What": 0.0, "When": 100.0}


# -- VCR-Bench, MMVU, Video-MMMU: breakdown fields found in EasyVideoR1's rows ----------------------------------------


def test_vcrbench_easyvideor1_rows_keep_the_question_kind(tmp_path: Path, judge: Any) -> None:
    """(VCR-Bench's official scorer judges multiple choice too, so a judge is needed.)"""
    spec = JudgeSpec(base_url=judge.url, model="j")
    choices = {"A": "hostile", "B": "another woman", "C": "another man", "D": "explosion"}
    official = [{"id": i, "video_path": "video/videoEspresso/x.mp4", "duration": 56, "dimension": "causal",
                 "question": f"Why {i}?A. hostile\nB. another woman\nC. another man\nD. explosion", "multiple-choice": True,
                 "choices": choices, "answer": "C", "reasoning": []} for i in range(2)]
    easy = [_evr1(i, f"Why {i}?", [f"{k}. {v}" for k, v in choices.items()], "C", "video/videoEspresso/x.mp4",
                  data_source="VCR-Bench") for i in range(2)]
    got_official = _score(_write(tmp_path / "o", {"vcrbench/vcrbench.json": official}), "vcrbench",
                          {"vcrbench/0": "C", "vcrbench/1": "D"}, spec)
    got_easy = _score(_write(tmp_path / "e", {"vcrbench/vcrbench.json": easy}), "vcrbench",
                      {"vcrbench/vcrbench/0": "C", "vcrbench/vcrbench/1": "D"}, spec)
    assert got_easy["score"] == got_official["score"] == 50.0
    assert got_easy["breakdowns"]["question_kind"] == got_official["breakdowns"]["question_kind"]


def test_mmvu_easyvideor1_rows_take_the_subject_from_the_video_folder(tmp_path: Path, judge: Any) -> None:
    """Art right, Chemistry wrong: 50; by subject Art 100, Chemistry 0, as from the official rows (MMVU's official
    scorer judges multiple choice too, so a judge is needed)."""
    spec = JudgeSpec(base_url=judge.url, model="j")
    five = ["10.0", "5.0", "12.0", "15.0", "20.0"]
    official = [{"id": f"validation_{i}", "video": f"https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos/{s}/0.mp4",
                 "question": f"Q{i}?", "question_type": "multiple-choice", "choices": dict(zip("ABCDE", five)), "answer": "A",
                 "metadata": {"subject": s}} for i, s in enumerate(["Art", "Chemistry"])]
    easy = [_evr1(i + 1, f"Q{i}?", [f"{'ABCDE'[k]}. {o}" for k, o in enumerate(five)], "A", f"./videos/{s}/0.mp4",
                  original_question_type="multiple-choice", process="", data_source="https://www.youtube.com/watch?v=x")
            for i, s in enumerate(["Art", "Chemistry"])]
    got_official = _score(_write(tmp_path / "o", {"mmvu/validation.json": official}), "mmvu",
                          {"mmvu/validation_0": "A", "mmvu/validation_1": "B"}, spec)
    got_easy = _score(_write(tmp_path / "e", {"mmvu/validation.json": easy}), "mmvu",
                      {"mmvu/validation/1": "A", "mmvu/validation/2": "B"}, spec)
    check_same(got_official, got_easy, 50.0)
    assert set(got_easy["breakdowns"]["category"]) == {"Art", "Chemistry"}


def _mmmu_easy(pid: int, image: bool) -> dict[str, Any]:
    row = _evr1(pid, "<image 1> What kind of sugar is this?" if image else "What kind of sugar is this?",
                ["A. aldose", "B. ketose", "C. glucose"], "A", "./dev_Biology_3.mp4", original_question_type="multiple-choice",
                process="", data_source="https://www.youtube.com/watch?v=U7YqCUd_ZfA")
    return {**row, "image_path": "./images/dev_Biology_3.png"} if image else row


def test_video_mmmu_easyvideor1_rows_keep_tracks_and_the_question_image(tmp_path: Path) -> None:
    """Adaptation right, Perception wrong, Comprehension right: 66.67, per track as from the official rows."""
    row = {"id": "dev_Biology_3", "question": "What kind of sugar is this?", "options": ["aldose", "ketose", "glucose"], "answer": "A"}
    official = {f"video_mmmu/{t}.json": [{**row, **({"image": "dev_Biology_3.png"} if t == "Adaptation" else {})}]
                for t in ("Perception", "Comprehension", "Adaptation")}
    easy = {"video_mmmu/Perception.json": [_mmmu_easy(1, True), _mmmu_easy(301, False), _mmmu_easy(601, False)]}
    official_root, easy_root = _write(tmp_path / "o", official), _write(tmp_path / "e", easy)
    got_official = _score(official_root, "video_mmmu", {"video_mmmu/Adaptation/dev_Biology_3": "A",
                                                         "video_mmmu/Comprehension/dev_Biology_3": "A",
                                                         "video_mmmu/Perception/dev_Biology_3": "B"})
    got_easy = _score(easy_root, "video_mmmu", {"video_mmmu/Perception/1": "A", "video_mmmu/Perception/301": "A",
                                                "video_mmmu/Perception/601": "B"})
    check_same(got_official, got_easy, 200 / 3)
    adaptation = BENCHMARKS.get("video_mmmu").load(easy_root)[0]
    assert [(m.kind, m.path) for m in adaptation.media] == [("video", "video_mmmu/dev_Biology_3.mp4"),
                                                            ("image", "video_mmmu/images/dev_Biology_3.png")]


def test_video_mmmu_easyvideor1_image_outside_the_adaptation_block_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, {"video_mmmu/Perception.json": [_mmmu_easy(601, True)]})
    with pytest.raises(RecordError, match=r"field 'track'.*Adaptation question.*601 places it in Perception"):
        BENCHMARKS.get("video_mmmu").load(tmp_path)
