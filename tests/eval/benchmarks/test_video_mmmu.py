"""Video-MMMU.

Video-MMMU's numeric answers as the official scorer reads them (`evr1.eval.benchmarks.video_mmmu`: the MMMU open-answer
parser of lmms-eval's videommmu task, which the authors' copy runs too): hand-worked cases, the drop of an empty
answer, and equality with lmms-eval's own `parse_open_response` + `eval_open` on generated texts.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.data.records import RecordError
from evr1.eval.benchmarks.video_mmmu import (
    MMMU_DOMAINS,
    MMMU_DROPPED,
    MMMU_NO_ANSWER,
    mmmu_open_right,
    mmmu_subject,
    video_mmmu_choice,
)
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS

from ..rows import both, check_same, easyvideor1_row, sample_row, score_strict, write_files, write_json


@pytest.mark.parametrize(("answer", "response", "right"), [
    ("42", "The answer is 42.", True),  # the shortest tail after a key phrase: "42"
    ("42", "42.0", True),  # floats compared rounded to 2 decimals
    ("42", "forty-two", False),  # words are no number
    ("3", "There are 3 cats and 4 dogs", True),  # every number of a key part is a prediction...
    ("4", "There are 3 cats and 4 dogs", True),  # ...so a hedge is right for both
    ("1,000", "It is 1,000 meters", True),  # comma-grouped numbers read whole
    ("2.5", "x = 2.499", True),  # "=" is a key phrase on the last line; 2.499 rounds to 2.5
    ("12", "12 = 3 * 4\nso the total is 24", False),  # "=" only on the last line; "is " gives the shortest tail "24"
    ("7", "Final answer: 7", True),  # "final " -> "answer: 7", its number 7
    ("10", "The result is 100", False),
    ("blue", "The color is Blue.", True),  # text: lower case, contained
    ("b", "the answer is b", True), ("b", "the answer is bob", False),  # one character: " b" / "b " only
    ("0.5", "1/2", False),  # a fraction is no number here
])
def test_mmmu_open_answer_table(answer: str, response: str, right: bool) -> None:
    assert mmmu_open_right(response, answer) is right


def _row(answer: Any, response: str | None, track: str, ptype: str = "numerical", score: float = 0.0) -> dict[str, Any]:
    return {"id": "x", "problem_type": ptype, "response": response, "answer": answer, "score": score, "error": None,
            "parsed": response or None, "options": ["x", "y"] if ptype == "multiple_choice" else None,
            "meta": {"track": track}}


def test_empty_answers_are_dropped_per_track() -> None:
    rows = [_row("42", "It is 42", "Perception"), _row("42", "", "Perception"),  # "": the authors' "API Error"
            _row("7", None, "Comprehension", score=0.0),  # a failed generation reaches the task as "": dropped
            _row("7", "<think>7?</think>", "Comprehension"),  # nothing left once the thinking is removed: dropped
            _row("A", "", "Comprehension", "multiple_choice"),  # an empty multiple-choice answer is dropped too
            _row("A", "B", "Comprehension", "multiple_choice"),
            _row("B", "B", "Adaptation", "multiple_choice", score=1.0)]
    got = block(BENCHMARKS.get("video_mmmu"), rows, "official")
    assert (got["n"], got["dropped"]) == (3, 4)
    assert {k: v["score"] for k, v in got["breakdowns"]["track"].items()} == {"Perception": 100.0, "Comprehension": 0.0,
                                                                             "Adaptation": 100.0}
    assert got["score"] == pytest.approx(200 / 3)


_PIECES = st.sampled_from(["42", "3", "1,000", "2.5", "0", "-7", ".5", "1e3", "1,5", " ", "\n", ".", ",", "is ", "so ",
                           "= ", "answer ", "total ", "The ", "result ", "B", "b", "blue", "cats", ": ", "and "])


_ANSWERS = st.sampled_from(["42", "3", "1,000", "2.5", "0", "-7", "0.5", "1000", "blue", "b", "cats"])


def _lmms_task_utils() -> ModuleType:
    """lmms-eval's videommmu task module (it reads HF_HOME when imported: set for that)."""
    unset = "HF_HOME" not in os.environ
    os.environ.setdefault("HF_HOME", "/nonexistent-hf-home")
    try:
        from lmms_eval.tasks.videommmu import utils
    finally:
        if unset:
            del os.environ["HF_HOME"]
    return utils


@settings(max_examples=150, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=12).map("".join), _ANSWERS)
def test_equals_lmms_evals_open_answer_parser(response: str, answer: str) -> None:
    utils = _lmms_task_utils()
    parse_open_response, eval_open = utils.parse_open_response, utils.eval_open
    parsed = parse_open_response(response)
    if parsed == "API Error":
        assert response in MMMU_DROPPED
        return
    assert mmmu_open_right(response, answer) is eval_open(answer, parsed)


@pytest.mark.parametrize(("rid", "subject"), [
    ("dev_Art_Theory_12", "Art_Theory"), ("validation_Math_1_2", "Math_1"), ("test_Music_3", "Music"),
    ("p1", None), ("dev_Math", None), ("dev_Math_x", None),
])
def test_mmmu_subject_of_an_id(rid: str, subject: str | None) -> None:
    assert mmmu_subject(rid) == subject
    if subject is not None:  # the task's own reader of the id agrees (it raises on the other forms)
        assert _lmms_task_utils().extract_subset_name(rid) == subject


def test_mmmu_domains_are_the_tasks() -> None:
    assert {d: list(s) for d, s in MMMU_DOMAINS.items()} == _lmms_task_utils().DOMAIN_CAT2SUB_CAT


def test_video_mmmu_overall_is_the_mean_of_the_tracks() -> None:
    scores = {"Perception": [1, 1], "Comprehension": [0], "Adaptation": [1, 0, 0]}
    rows = [{**sample_row("A", "A" if s else "B", s, track=t), "options": ["x", "y"]} for t, ss in scores.items() for s in ss]
    official, strict = both("video_mmmu", rows)
    assert official["score"] == pytest.approx((100 + 0 + 100 / 3) / 3)  # 44.44
    assert strict["score"] == pytest.approx(50.0)  # 3 / 6
    assert official["breakdowns"]["track"]["Adaptation"] == {"score": pytest.approx(100 / 3), "n": 3}


def test_video_mmmu_reads_letters_beyond_d_and_numbers_officially() -> None:
    options = [str(i) for i in range(10)]
    rows = [{**sample_row("J", "The answer is J.", 0, track="Perception"), "options": options},  # strict read nothing: 0
            {**sample_row("B", "b", 1, track="Perception"), "options": options},  # lower case: no letter for lmms-eval
            sample_row(42.0, "forty-two", 1, "numerical", track="Comprehension")]  # evr1 reads 42; the MMMU parser no number
    official = block(BENCHMARKS.get("video_mmmu"), rows, "official")
    assert official["breakdowns"]["track"]["Perception"]["score"] == 50.0
    assert official["score"] == pytest.approx((50 + 0) / 2)


OPTIONS = ["red apple", "blue car", "green tree", "yellow sun"]


# parse_multi_choice_response of the authors' copy (EvolvingLMMs-Lab/VideoMMMU lmms_eval/tasks/videommmu/utils.py,
# HEAD 88b4ac3, l. 408-505), worked by hand; the last column is lmms-eval 0.7.3's stock reading (extract_mcq_answer).
@pytest.mark.parametrize(("response", "authors", "lmms_eval"), [
    ("A or B", "B", "A"),  # both "X ": the last written wins
    ("", None, ""),  # dropped by the authors' aggregation; lmms-eval reads nothing (wrong, counted)
    ("D: yellow sun. A: red apple", "A", "D"),  # both "X:": the last
    ("A: no. B. yes", "B", "A"),  # "X." outranks "X:"
    ("I think the answer is clearly the blue car here", "B", ""),  # over 5 words, no letter: an option's text
    ("The answer is (C).", "C", "C"), ("B.", "B", "B"), ("C", "C", "C"),
    ("A. red apple, but maybe C.", "A", "A"),  # the final "." is stripped first: only "A." remains
    ("E", MMMU_NO_ANSWER, ""),  # no such option
    ("none of them", MMMU_NO_ANSWER, ""),  # 3 words: no text match tried
])
def test_video_mmmu_reads_as_the_authors_copy(response: str, authors: str | None, lmms_eval: str) -> None:
    from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer

    assert video_mmmu_choice(response, OPTIONS) == authors
    assert extract_mcq_answer(response, choices=list("ABCD")) == lmms_eval  # the installed stock reader, for contrast


def test_video_mmmu_empty_answers_are_dropped_and_hedges_read_last() -> None:
    rows = [{**sample_row("A", r, track="Perception"), "options": OPTIONS} for r in ("A", "", "A or B", None)]
    official = block(BENCHMARKS.get("video_mmmu"), rows, "official")
    assert official["breakdowns"]["track"]["Perception"] == {"score": 50.0, "n": 2} and official["dropped"] == 2


def test_video_mmmu_tables_by_domain_and_subject_within_each_track() -> None:
    def mmmu(track: str, subject: str, right: bool) -> dict[str, Any]:
        domain = {"Art": "Art and Design", "Music": "Art and Design", "Math": "Science"}[subject]
        return {**sample_row("A", "A" if right else "B", float(right), track=track, track_subject=f"{track}: {subject}",
                      track_domain=f"{track}: {domain}"), "options": ["x", "y"]}

    rows = [mmmu("Perception", "Art", True), mmmu("Perception", "Art", False), mmmu("Perception", "Music", True),
            mmmu("Perception", "Math", False), mmmu("Adaptation", "Math", True)]
    tables = block(BENCHMARKS.get("video_mmmu"), rows, "official")["breakdowns"]
    # instance-level within each track's domain (Art 1/2 + Music 1/1 = 2/3), as lmms-eval's per-task "Overall-<domain>"
    assert tables["track_domain"] == {"Adaptation: Science": {"score": 100.0, "n": 1},
                                      "Perception: Art and Design": {"score": pytest.approx(200 / 3), "n": 3},
                                      "Perception: Science": {"score": 0.0, "n": 1}}
    assert tables["track_subject"]["Perception: Art"] == {"score": 50.0, "n": 2}
    assert set(tables["track_subject"]) == {"Perception: Art", "Perception: Music", "Perception: Math", "Adaptation: Math"}


def test_video_mmmu_official_nested_files_import_with_track_ids(tmp_path: Path) -> None:
    # The tracks share ids (dev_Biology_3 is in all three): ids are <Track>/<id>.
    item = {"id": "dev_Biology_3", "link_selected": "https://www.youtube.com/watch?v=U7YqCUd_ZfA",
            "question": "How many carbon atoms do they have?", "options": ["3, 3", "3, 4", "3, 5"], "answer": "B"}
    numeric = {"id": "validation_Chemistry_13", "link_selected": "https://www.youtube.com/watch?v=TpylyLZisTU",
               "question": "What mass was dissolved? <image 1>", "options": [], "answer": "12.97", "question_type": "open"}
    write_json(tmp_path, "video_mmmu/Perception.json", {"Perception": {"0": item}})
    write_json(tmp_path, "video_mmmu/Adaptation.json", {"Adaptation": {"0": {**item, "question_type": "multiple-choice"}, "1": numeric}})
    records = BENCHMARKS.get("video_mmmu").load(tmp_path)
    assert [(r.id, r.problem_type.value, r.answer, r.meta["track"], [m.path for m in r.media]) for r in records] == [
        ("video_mmmu/Perception/dev_Biology_3", "multiple_choice", "B", "Perception", ["video_mmmu/videos/dev_Biology_3.mp4"]),
        ("video_mmmu/Adaptation/dev_Biology_3", "multiple_choice", "B", "Adaptation", ["video_mmmu/videos/dev_Biology_3.mp4"]),
        ("video_mmmu/Adaptation/validation_Chemistry_13", "numerical", "12.97", "Adaptation",
         ["video_mmmu/videos/validation_Chemistry_13.mp4"]),
    ]
    assert [(r.meta["track_subject"], r.meta["track_domain"]) for r in records] == [
        ("Perception: Biology", "Perception: Science"), ("Adaptation: Biology", "Adaptation: Science"),
        ("Adaptation: Chemistry", "Adaptation: Science")]


def test_video_mmmu_unknown_shape_says_which_is_expected(tmp_path: Path) -> None:
    write_json(tmp_path, "video_mmmu/Perception.json", {"perception": {"0": {"question": "Q?"}}})
    with pytest.raises(RecordError, match=r"Perception.json:1: .*\{\"Perception\": \{index: row\}\}"):
        BENCHMARKS.get("video_mmmu").load(tmp_path)


def _mmmu_easy(pid: int, image: bool) -> dict[str, Any]:
    row = easyvideor1_row(pid, "<image 1> What kind of sugar is this?" if image else "What kind of sugar is this?",
                ["A. aldose", "B. ketose", "C. glucose"], "A", "./dev_Biology_3.mp4", original_question_type="multiple-choice",
                process="", data_source="https://www.youtube.com/watch?v=U7YqCUd_ZfA")
    return {**row, "image_path": "./images/dev_Biology_3.png"} if image else row


def test_video_mmmu_easyvideor1_rows_keep_tracks_and_the_question_image(tmp_path: Path) -> None:
    """Adaptation right, Perception wrong, Comprehension right: 66.67, per track as from the official rows."""
    row = {"id": "dev_Biology_3", "question": "What kind of sugar is this?", "options": ["aldose", "ketose", "glucose"], "answer": "A"}
    official = {f"video_mmmu/{t}.json": [{**row, **({"image": "dev_Biology_3.png"} if t == "Adaptation" else {})}]
                for t in ("Perception", "Comprehension", "Adaptation")}
    easy = {"video_mmmu/Perception.json": [_mmmu_easy(1, True), _mmmu_easy(301, False), _mmmu_easy(601, False)]}
    official_root, easy_root = write_files(tmp_path / "o", official), write_files(tmp_path / "e", easy)
    got_official = score_strict(official_root, "video_mmmu", {"video_mmmu/Adaptation/dev_Biology_3": "A",
                                                         "video_mmmu/Comprehension/dev_Biology_3": "A",
                                                         "video_mmmu/Perception/dev_Biology_3": "B"})
    got_easy = score_strict(easy_root, "video_mmmu", {"video_mmmu/Perception/1": "A", "video_mmmu/Perception/301": "A",
                                                "video_mmmu/Perception/601": "B"})
    check_same(got_official, got_easy, 200 / 3)
    adaptation = BENCHMARKS.get("video_mmmu").load(easy_root)[0]
    assert [(m.kind, m.path) for m in adaptation.media] == [("video", "video_mmmu/dev_Biology_3.mp4"),
                                                            ("image", "video_mmmu/images/dev_Biology_3.png")]


def test_video_mmmu_easyvideor1_image_outside_the_adaptation_block_is_an_error(tmp_path: Path) -> None:
    write_files(tmp_path, {"video_mmmu/Perception.json": [_mmmu_easy(601, True)]})
    with pytest.raises(RecordError, match=r"field 'track'.*Adaptation question.*601 places it in Perception"):
        BENCHMARKS.get("video_mmmu").load(tmp_path)

