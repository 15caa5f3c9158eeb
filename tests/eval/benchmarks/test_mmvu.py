"""MMVU: its official scorer and aggregation (and importer), tables worked out by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from judge_server import Judge

from evr1.data.records import Record, RecordError
from evr1.errors import ConfigError
from evr1.eval.api import evaluate
from evr1.eval.benchmarks.mmvu import MMVU_MULTI_CHOICE, MMVU_OPEN_ENDED, mmvu_messages, mmvu_verdict
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

from ..rows import check_same, easyvideor1_row, score_strict, write_files, write_json
from ..verdict_judge import running_verdict_judge, verdict_requests

RIGHT, WRONG = '{"extracted_answer": "B", "correct": true}', '{"extracted_answer": "fire", "correct": false}'


def test_mmvu_messages_are_the_official_wording() -> None:
    mc = Record(id="m", problem="Which law?", problem_type="multiple_choice", answer="B", options=["Ohm", "Newton"])
    system, user = mmvu_messages(mc, "<think>hm</think>It is B")
    assert system == MMVU_MULTI_CHOICE and system.startswith("Evaluate whether the model's final answer is correct")
    assert user == ("Question: Which law?\n\nOptions:\nA: Ohm\nB: Newton\n\nGround Truth Answer: B\n\n"
                    "Model Response to the Question: <think>hm</think>It is B")  # the whole response is judged
    open_ = Record(id="o", problem="What reaction?", problem_type="open_ended", answer="combustion")
    system, user = mmvu_messages(open_, "")
    assert system == MMVU_OPEN_ENDED and "exact same technique or concept" in system
    assert user == "Question: What reaction?\n\nGround Truth Answer: combustion\n\nModel Response to the Question: "


@pytest.mark.parametrize(("reply", "verdict"), [
    (RIGHT, {"extracted_answer": "B", "correct": True}),
    (WRONG, {"extracted_answer": "fire", "correct": False}),
    ('{"extracted_answer": "B", "correct": "true"}', {"extracted_answer": "B", "correct": True}),  # pydantic's lax bool
    ('{"correct": true}', {"extracted_answer": "", "correct": False}),  # a field missing: no output
    ('Sure: {"extracted_answer": "B", "correct": true}', {"extracted_answer": "", "correct": False}),  # extra text
    ("correct", {"extracted_answer": "", "correct": False}), ("", {"extracted_answer": "", "correct": False}),
    ('{"extracted_answer": "B", "correct": "maybe"}', {"extracted_answer": "", "correct": False}),  # a hedge
])
def test_mmvu_verdict_parsing(reply: str, verdict: dict) -> None:
    assert mmvu_verdict(reply) == verdict


def test_mmvu_official_block_judges_every_item(bench_root: Path, tmp_path: Path) -> None:
    answers = {"mmvu/mu1": "The answer is B", "mmvu/mu2": "combustion"}
    with running_verdict_judge({"The answer is B": RIGHT, "combustion": WRONG}) as judge:
        spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"))
        got = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]
    official, strict = got["mmvu"]["protocols"]["official"], got["mmvu"]["protocols"]["strict"]
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 0)
    assert official["breakdowns"]["question_kind"] == {"multiple-choice": {"score": 100.0, "n": 1},
                                                       "open-ended": {"score": 0.0, "n": 1}}
    # strict: mu1 read locally (B, right); evr1's verdict prompt gets the JSON reply, which holds no verdict: failed
    assert (strict["score"], strict["failed"]) == (50.0, 1)
    requests = [b for b in judge.requests if b not in verdict_requests(judge)]
    assert len(requests) == 2
    body = next(b for b in requests if "Options:" in b["messages"][1]["content"])
    assert body["messages"][0]["content"] == MMVU_MULTI_CHOICE
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (128, 1.0, 1.0)
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["extracted_answer", "correct"]


def test_an_unreachable_official_judge_scores_0_and_is_asked_again_on_resume(bench_root: Path, tmp_path: Path,
                                                                              judge: Judge) -> None:
    judge.reply, judge.fail_first = RIGHT, 3  # down for the first run's three requests (evr1's one, the official two)
    spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="j", retries=0))
    answers = {"mmvu/mu1": "B", "mmvu/mu2": "combustion"}
    first = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]
    assert first["mmvu"]["protocols"]["official"]["score"] == 0.0  # no judge output: incorrect, as the official script
    assert first["mmvu"]["protocols"]["strict"]["score"] == 50.0  # mu1 read locally; mu2's verdict failed
    again = ScriptedResponder(answers)
    second = evaluate(spec, again, tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]["mmvu"]
    assert again.asked == []  # judged again on the stored responses
    assert second["protocols"]["official"]["score"] == 100.0 and len(judge.requests) == 3 + 3


def test_a_strict_headline_runs_mmvu_multiple_choice_without_a_judge(bench_root: Path, tmp_path: Path) -> None:
    """MMVU's official scorer judges every answer: with no judge set, a strict run still scores the multiple-choice
    items with evr1's reader, and the official block says it is unavailable; an official headline is refused."""
    answers = {"mmvu/mu1": "The answer is B"}
    spec = EvalSpec(protocol="strict", limit=1)  # mu1, the multiple-choice item
    got = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["mmvu"], data_root=bench_root)["benchmarks"]
    strict, official = got["mmvu"]["protocols"]["strict"], got["mmvu"]["protocols"]["official"]
    assert (got["mmvu"]["score"], strict["n"]) == (100.0, 1)
    assert official["score"] is None and official["metrics"] == {} and "no judge was set" in official["unavailable"]
    assert "| MMVU | strict | n/a | 100.00 |" in (tmp_path / "results.md").read_text()
    with pytest.raises(ConfigError, match="--protocol strict"):
        evaluate(EvalSpec(limit=1), ScriptedResponder(answers), tmp_path / "o", benchmarks=["mmvu"], data_root=bench_root)


MMVU_ROWS = [
    {"id": "validation_0", "video": "https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos/Art/0.mp4",
     "youtube_url": "https://www.youtube.com/watch?v=VkqytRr85ao", "question_type": "open-ended",
     "metadata": {"subject": "Art", "textbook": "The Filmmaker's Handbook"},
     "question": "Which cinematic shooting technique is shown in the video?",
     "choices": {"A": "", "B": "", "C": "", "D": "", "E": ""}, "answer": "Dolly Zoom"},
    {"id": "validation_1", "video": "https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos/Chemistry/0.mp4",
     "youtube_url": "https://www.youtube.com/watch?v=x", "question_type": "multiple-choice",
     "metadata": {"subject": "Chemistry"}, "question": "How many grams are needed?",
     "choices": {"A": "10.0", "B": "5.0", "C": "12.0", "D": "15.0", "E": "20.0"}, "answer": "A"},
]


def test_mmvu_official_validation_rows_import(tmp_path: Path) -> None:
    write_json(tmp_path, "mmvu/validation.json", MMVU_ROWS)
    records = BENCHMARKS.get("mmvu").load(tmp_path)
    assert [(r.id, r.problem_type.value, r.answer, r.media[0].path, r.meta["category"]) for r in records] == [
        ("mmvu/validation_0", "open_ended", "Dolly Zoom", "mmvu/videos/Art/0.mp4", "Art"),
        ("mmvu/validation_1", "multiple_choice", "A", "mmvu/videos/Chemistry/0.mp4", "Chemistry"),
    ]


def test_mmvu_row_without_a_video_names_both_accepted_fields(tmp_path: Path) -> None:
    write_json(tmp_path, "mmvu/validation.json", [{k: v for k, v in MMVU_ROWS[1].items() if k != "video"}])
    with pytest.raises(RecordError, match=r"video \(official validation.json\) or video_path \(lmms-eval rows\)"):
        BENCHMARKS.get("mmvu").load(tmp_path)


def test_mmvu_easyvideor1_rows_take_the_subject_from_the_video_folder(tmp_path: Path, judge: Any) -> None:
    """Art right, Chemistry wrong: 50; by subject Art 100, Chemistry 0, as from the official rows (MMVU's official
    scorer judges multiple choice too, so a judge is needed)."""
    spec = JudgeSpec(base_url=judge.url, model="j")
    five = ["10.0", "5.0", "12.0", "15.0", "20.0"]
    official = [{"id": f"validation_{i}", "video": f"https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos/{s}/0.mp4",
                 "question": f"Q{i}?", "question_type": "multiple-choice", "choices": dict(zip("ABCDE", five)), "answer": "A",
                 "metadata": {"subject": s}} for i, s in enumerate(["Art", "Chemistry"])]
    easy = [easyvideor1_row(i + 1, f"Q{i}?", [f"{'ABCDE'[k]}. {o}" for k, o in enumerate(five)], "A", f"./videos/{s}/0.mp4",
                  original_question_type="multiple-choice", process="", data_source="https://www.youtube.com/watch?v=x")
            for i, s in enumerate(["Art", "Chemistry"])]
    got_official = score_strict(write_files(tmp_path / "o", {"mmvu/validation.json": official}), "mmvu",
                          {"mmvu/validation_0": "A", "mmvu/validation_1": "B"}, spec)
    got_easy = score_strict(write_files(tmp_path / "e", {"mmvu/validation.json": easy}), "mmvu",
                      {"mmvu/validation/1": "A", "mmvu/validation/2": "B"}, spec)
    check_same(got_official, got_easy, 50.0)
    assert set(got_easy["breakdowns"]["category"]) == {"Art", "Chemistry"}

