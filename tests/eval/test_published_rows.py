"""Importers of the six benchmarks lmms-eval lacks, on rows in the format their releases publish.

Sources of the rows (texts shortened where marked):
- VCR-Bench: github.com/zhishuifeiqian/VCR-Bench `eval_code/input.json` (items 0 and 3; `reasoning` cut).
- VideoReasonBench: github.com/llyx97/video_reason_bench `questions/card.json` (first item; `actions`/`states` cut).
- LongVideo-Reason: huggingface.co/datasets/LongVideo-Reason/longvideo-reason `test.jsonl` line 0 (fields and
  question as quoted by a third-party analysis; the option texts from EasyVideoR1's copy of the same item).
- STVG: the HC-STVG README example (github.com/tzhhhh123/HC-STVG), with 259 boxes for its 8.63 s span at 30 fps;
  the v2 variant (`img_size`, `English`) as read by public HC-STVG v2 preprocessing code.
- LiveSports-3K QA: the fields LiveCC's `evaluation/livesports3kqa` script reads (github.com/showlab/livecc),
  with a question, options and span from EasyVideoR1's copy (`I0rOeSG6_Y4_300.745_350.676.mp4`).
ODV-Bench is absent: its official annotation format could not be read (see docs/benchmarks.md).
- TempCompass caption matching (lmms-eval/TempCompass, a stock task): the three question templates of
  TempCompass's question generation (`Caption A:`, `Option 1:`, `Sentence A:` lines; the answer is the right
  option's line) and the "Option 1" example its inference scripts quote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evr1.data.records import RecordError
from evr1.eval.annotation_rows import split_embedded
from evr1.eval.benchmarks.longvideo_reason import longvideo_reason
from evr1.eval.benchmarks.odvbench import odvbench
from evr1.eval.benchmarks.tempcompass import tempcompass
from evr1.eval.definition import RowContext
from evr1.registry import BENCHMARKS

KILL_BILL = "video/videoEspresso/Kill.Bill.Vol.1.2003__#0-05-55_0-08-54_label_B1-0-0.mp4"


LAW_ABIDING = "video/videoEspresso/Law.Abiding.Citizen.2009__#01-14-42_01-15-38_label_G-0-0.mp4"


LAW_OPTIONS = ["He and the woman are in a hostile relationship.", "He prioritized rescuing another woman.",
               "Another man rescued the woman.", "An explosion occurred again at the scene."]


ANIMALS_OPTIONS = [
    "To document the hunting strategies of predators across species.",
    "To contrast human athleticism with animal locomotion, culminating in the cheetah's evolutionary adaptation for speed.",
    "To highlight the importance of habitat conservation for both reptiles and mammals.",
    "To demonstrate interspecies communication methods in the wild.",
]


CARD_QUESTION = (
    "The video showcases a sequence of operations involving one or more piles of cards. [...]\n"
    "What are the 1st to 3rd cards being added to any pile throughout the video? [...]\n\n"
    "Provide a summary of the final answer after 'Final Answer:'"
)


CARD_ANSWER = "1st: Queen of Clubs, pile0\n2nd: Ace of Hearts, pile0\n3rd: Jack of Diamonds, pile0"


BOW_OPTIONS = ["While showing the bow and arrow up close-up on camera", "When shooting with a bow and arrow",
               "When assembling a bow and arrow", "At the end of the shooting"]


VCR_MC = {
    "id": 3, "video_path": LAW_ABIDING, "duration": 56, "dimension": "Video Plot Analysis",
    "question": "Why didn't the Black man go to rescue the trapped woman after the explosion?"
                + "".join(f"{c}. {o}\n" for c, o in zip("ABCD", LAW_OPTIONS)),
    "multiple-choice": True, "choices": dict(zip("ABCD", LAW_OPTIONS)), "answer": "D",
    "reasoning": ["1. 0:08-0:30, a series of explosions occurred in the parking lot, [...]"],
}


VCR_OPEN = {
    "id": 0, "video_path": KILL_BILL, "duration": 179, "dimension": "Temporal Spatial Reasoning",
    "question": "In which room does the second fight in the video take place?", "multiple-choice": False,
    "choices": {"A": "", "B": "", "C": "", "D": ""}, "answer": "Kitchen",
    "reasoning": ["1. 0:07-0:55, two women engage in a physical altercation [...]"],
}


VIDEOREASON = {"state1_op5_order_operation_start": {
    "video": "videos/card/state1_op5_start.mp4", "question": CARD_QUESTION, "answer": CARD_ANSWER,
    "dim": "order_operation", "num_state": 1, "num_operation": 5, "visible_time": "start",
    "actions": ["add Queen of Clubs to pile0", "add Ace of Hearts to pile0"],
}}


LONGVIDEO_REASON = {
    "problem_id": 0, "data_type": "video", "problem_type": "goal", "videos": "longvila_videos/I_Q3ajyOrcI.mp4",
    "problem": "What is the primary intention behind the video's sequence of showcasing an African elephant "
               "(0:00:00-0:00:30), a bearded dragon (0:00:30-0:00:50), a human sprinter labeled \"Bolt\" "
               "(0:01:10-0:01:40), and a cheetah (0:08:00-0:08:50)?"
               + "".join(f"\n{c}. {o}" for c, o in zip("ABCD", ANIMALS_OPTIONS)),
    "reasoning": "The sequence begins by showcasing the African elephant [...]", "answer": "<answer>B</answer>",
}


HCSTVG = {"55_vfjywN5CN0Y.mp4": {
    "bbox": [[100, 50, 40, 120]] * 259, "st_time": 8.914734192388288, "ed_time": 17.544734192388397, "img_num": 600,
    "caption": "The woman in red clothes turns in a circle.", "width": 640, "height": 360, "st_frame": 268,
}}


HCSTVG_V2 = {"12_abc.mp4": {
    "bbox": [[1, 2, 3, 4]] * 11, "st_time": 1.0, "ed_time": 1.4, "img_num": 500, "img_size": [360, 640],
    "English": "The man in black sits down.", "st_frame": 26,
}}


LIVESPORTS = {
    "video_id": "I0rOeSG6_Y4", "question_id": "I0rOeSG6_Y4_e10_q1", "q_type": "When", "OCR": 0,
    "question": "When are the specific parameters of the various aspects of the bow and arrow explained by the man?",
    "options": [f"{c}: {o}" for c, o in zip("ABCD", BOW_OPTIONS)], "answer": "A",
    "video_start": 300.745, "video_end": 350.676,
}


# name, row, id, problem type, problem, options, answer, media (path, start, end), selected meta
CASES: list[tuple[str, Any, str, str, str, list[str] | None, Any, tuple[str, float | None, float | None], dict]] = [
    ("vcrbench", VCR_MC, "vcrbench/3", "multiple_choice",
     "Why didn't the Black man go to rescue the trapped woman after the explosion?", LAW_OPTIONS, "D",
     (f"vcrbench/videos/{LAW_ABIDING}", None, None),
     {"question_kind": "multiple-choice", "category": "Video Plot Analysis", "duration": 56,
      "reasoning": VCR_MC["reasoning"]}),
    ("vcrbench", VCR_OPEN, "vcrbench/0", "open_ended", VCR_OPEN["question"], None, "Kitchen",
     (f"vcrbench/videos/{KILL_BILL}", None, None), {"question_kind": "open-ended", "category": "Temporal Spatial Reasoning",
                                                        "reasoning": VCR_OPEN["reasoning"],
                                                        "released_question": VCR_OPEN["question"]}),
    ("videoreasonbench", VIDEOREASON, "videoreasonbench/card_state1_op5_order_operation_start", "open_ended",
     CARD_QUESTION, None, CARD_ANSWER, ("videoreasonbench/videos/card/state1_op5_start.mp4", None, None),
     {"category": "Recall Order", "level": 1, "demo": "card"}),
    ("stvg", HCSTVG, "stvg/55_vfjywN5CN0Y", "spatial_temporal_grounding",
     'Find when and where this happens, and track the person: "The woman in red clothes turns in a circle."', None,
     # 30 fps; frame k (1-based) is at (k - 1) / 30 s: frames 268..526 span 8.9..17.5 s, whole seconds 9..17.
     {"time": [8.914734192388288, 17.544734192388397], "boxes": {str(s): [100, 50, 140, 170] for s in range(9, 18)}},
     ("stvg/videos/55_vfjywN5CN0Y.mp4", None, None), {"width": 640, "height": 360}),
    ("stvg", HCSTVG_V2, "stvg/12_abc", "spatial_temporal_grounding",
     'Find when and where this happens, and track the person: "The man in black sits down."', None,
     # 25 fps; frames 26..36 are at 1.0..1.4 s: only frame 26 falls on a whole second.
     {"time": [1.0, 1.4], "boxes": {"1": [1, 2, 4, 6]}}, ("stvg/videos/12_abc.mp4", None, None),
     {"width": 640, "height": 360}),
    ("livesports3k_qa", LIVESPORTS, "livesports3k_qa/I0rOeSG6_Y4_e10_q1", "multiple_choice", LIVESPORTS["question"],
     BOW_OPTIONS, "A", ("livesports3k/videos/I0rOeSG6_Y4.mp4", 300.745, 350.676), {"category": "When", "ocr": 0}),
]


def _convert(name: str, row: Any) -> list:
    bench = BENCHMARKS.get(name)
    return bench.convert_row(row, RowContext(bench, Path(f"{name}.json"), 1))


@pytest.mark.parametrize(("name", "row", "rid", "ptype", "problem", "options", "answer", "media", "meta"), CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_published_row_imports(name: str, row: Any, rid: str, ptype: str, problem: str, options: list[str] | None,
                               answer: Any, media: tuple, meta: dict) -> None:
    [record] = _convert(name, json.loads(json.dumps(row)))
    assert (record.id, record.problem_type.value, record.problem, record.options, record.answer) == (
        rid, ptype, problem, options, answer)
    assert [(m.path, m.start, m.end) for m in record.media] == [media]
    assert {k: record.meta.get(k) for k in meta} == meta


def test_longvideo_reason_importer_reads_the_published_row() -> None:
    bench = BENCHMARKS.get("longvideo_reason")
    [d] = longvideo_reason(LONGVIDEO_REASON, RowContext(bench, Path("test.jsonl"), 1))
    assert d["problem"].endswith("a cheetah (0:08:00-0:08:50)?") and d["options"] == ANIMALS_OPTIONS
    assert (d["id"], d["problem_type"], d["answer"], d["meta"]) == ("0", "multiple_choice", "B", {"category": "goal"})
    assert d["media"] == [{"kind": "video", "path": "longvideo_reason/videos/longvila_videos/I_Q3ajyOrcI.mp4"}]


def test_longvideo_reason_published_row_is_routed_to_its_importer() -> None:
    [record] = _convert("longvideo_reason", LONGVIDEO_REASON)
    assert record.answer == "B"


def test_videoreasonbench_merged_file_keeps_official_ids() -> None:
    merged = {f"card_{k}": v for k, v in VIDEOREASON.items()}  # the official loader's `<demo>_<key>` ids
    [record] = _convert("videoreasonbench", merged)
    assert record.id == "videoreasonbench/card_state1_op5_order_operation_start"


def test_videoreasonbench_unknown_dim_is_named() -> None:
    row = {"q": {**VIDEOREASON["state1_op5_order_operation_start"], "dim": "guess_state"}}
    with pytest.raises(RecordError, match="unknown VideoReasonBench dim 'guess_state'"):
        _convert("videoreasonbench", row)


def test_vcrbench_mc_without_multiple_choice_flag_names_the_field() -> None:
    row = {k: v for k, v in VCR_MC.items() if k != "multiple-choice"}
    with pytest.raises(RecordError, match="field 'multiple-choice'"):
        _convert("vcrbench", row)


DRIBBLE, DUNK = "The man is dribbling a basketball.", "A man is dunking a basketball."


# format, question, answer, problem, options, letter
TEMPCOMPASS = [
    ("caption_matching", f"Which description is a more suitable match for the video?\nOption 1: {DRIBBLE}\nOption 2: {DUNK}",
     f"Option 2: {DUNK}", "Which description is a more suitable match for the video?", [DRIBBLE, DUNK], "B"),
    ("caption_matching", f"Which caption matches the video better?\nCaption A: {DUNK}\nCaption B: {DRIBBLE}",
     f"Caption A: {DUNK}", "Which caption matches the video better?", [DUNK, DRIBBLE], "A"),
    ("caption_matching", f"Which sentence better captures the essence of the video?\nSentence A: {DRIBBLE}\nSentence B: {DUNK}",
     f"Sentence B: {DUNK}", "Which sentence better captures the essence of the video?", [DRIBBLE, DUNK], "B"),
    ("multi-choice", "What is the man doing?\nA. dribbling\nB. dunking\nC. passing", "B. dunking",
     "What is the man doing?", ["dribbling", "dunking", "passing"], "B"),
]


@pytest.mark.parametrize(("fmt", "question", "answer", "problem", "options", "letter"), TEMPCOMPASS,
                         ids=[f"{c[0]}-{c[2].split()[0]}" for c in TEMPCOMPASS])
def test_tempcompass_published_option_lines_import(fmt: str, question: str, answer: str, problem: str,
                                                   options: list[str], letter: str) -> None:
    bench = BENCHMARKS.get("tempcompass")
    row = {"video_id": "1025366786", "dim": "action", "question": question, "answer": answer}
    [d] = tempcompass(row, RowContext(bench, Path(f"questions/{fmt}.json"), 1))
    assert (d["problem"], d["options"], d["answer"]) == (problem, options, letter)
    assert d["meta"] == {"format": fmt, "dimension": "action", "released_question": question, "released_answer": answer}


def test_split_embedded_names_a_question_without_options() -> None:
    with pytest.raises(ValueError, match="question holds no lettered options: 'Which caption fits?"):
        split_embedded("Which caption fits?\nCaption A: only one")


def test_odvbench_reads_the_authors_task_rows() -> None:
    """The fields the authors' lmms-eval task reads (MCG-NJU/StreamForest odvbench/utils.py): option texts in
    `candidates`, the right one's text in `answer`, a clip `start`-`end`, task levels; no id: the row's position."""
    bench = BENCHMARKS.get("odvbench")
    row = {"video": "drive/0001.mp4", "start": 2, "end": 7.5, "question": "What is ahead?",
           "candidates": ["a cyclist", "a red light", "nothing"], "answer": "a red light", "task": "static",
           "subtask": "traffic light", "subsubtask": "state"}
    [d] = odvbench(row, RowContext(bench, Path("odvbench.json"), 1, item=3))
    assert (d["id"], d["answer"], d["options"]) == ("3", "B", ["a cyclist", "a red light", "nothing"])
    assert d["media"] == [{"kind": "video", "path": "odvbench/videos/drive/0001.mp4", "start": 2.0, "end": 7.5}]
    assert d["meta"] == {"task": "static", "subtask": "traffic light", "subsubtask": "state"}

