"""Importers and aggregation on rows shaped as the benchmarks' own releases publish them.

Sources of the rows (texts shortened, probes and rows cut to a few):
- OVO-Bench: github.com/JoeLeelyf/OVO-Bench `data/ovo_bench_new.json` (ids 0, 1468, 1516, 1558); the offline
  protocol (`utils/OVOBench.py`, `constant.py`, `utils/OVOBenchScore.py`): one request per `test_info` probe on
  the video up to its `realtime`; task = mean over its probes; category = mean of its tasks; overall = mean of those.
- MLVU: github.com/JUNJIE99/MLVU `data/1_plotQA.json` (item 0) and `data/8_sub_scene.json` (item 0).
- MMVU: github.com/yale-nlp/MMVU `data/validation.json` (items 0 and 1).
- Video-MMMU: github.com/EvolvingLMMs-Lab/VideoMMMU `data/perception_video.json`, `data/adaptation_video.json`.
- LVBench: github.com/THUDM/LVBench `lvbench/metrics/compute_accuracy.py` counts a question under each of its types.
- Video-MME-v2: github.com/MME-Benchmarks/Video-MME-v2 `evaluation/test_video_mme_v2.py` (`get_final_rating`): a
  group's `level`/`second_head`/`third_head` are its last question's; `level_N` is the mean group score.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from evr1.data.records import RecordError
from evr1.eval import aggregate as agg
from evr1.eval.api import evaluate
from evr1.eval.eval_prompt import eval_question_text
from evr1.eval.official import LETTERS, letter_of
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec

# -- OVO-Bench ------------------------------------------------------------------------------------

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


def _write(root: Path, relative: str, content: Any) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


@pytest.fixture
def ovo_root(tmp_path: Path) -> Path:
    _write(tmp_path, "ovobench/ovo_bench_new.json", OVO_ROWS)
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
    # official (OVOBenchScore.py): "no" is not "No" (CRR 0/2, SSR 1/2); the total is the mean over the 4 tasks
    official = got["protocols"]["official"]
    assert {k: v["score"] for k, v in official["breakdowns"]["task"].items()} == pytest.approx(
        {"EPM": 100.0, "CRR": 0.0, "SSR": 50.0, "REC": 0.0})
    assert official["score"] == pytest.approx(37.5) and official["metrics"]["category_mean"] == pytest.approx(
        (100 + 50 / 3) / 2)
    assert got["metrics"]["backward"] == pytest.approx(100.0) and got["metrics"]["forward"] == pytest.approx(50.0)
    assert {k: v["score"] for k, v in got["breakdowns"]["task"].items()} == pytest.approx(
        {"EPM": 100.0, "CRR": 50.0, "SSR": 100.0, "REC": 0.0})
    assert got["n"] == 7


@pytest.mark.parametrize(("row", "field"), [
    ({**OVO_ROWS[2], "test_info": [{"realtime": 27, "type": 1}]}, "step"),
    ({k: v for k, v in OVO_ROWS[3].items() if k != "activity"}, "activity"),
])
def test_ovobench_forward_row_without_its_field_is_named(tmp_path: Path, row: dict[str, Any], field: str) -> None:
    _write(tmp_path, "ovobench/ovo_bench_new.json", [row])
    with pytest.raises(RecordError, match=f"ovo_bench_new.json:1: field '{field}'"):
        BENCHMARKS.get("ovobench").load(tmp_path)


# -- MLVU ----------------------------------------------------------------------------------------

PLOT = {"video": "movie101_66.mp4", "duration": 246, "question": "What color is the main male character in the video?",
        "candidates": ["Yellow", "Red", "Green", "Blue"], "answer": "Yellow", "question_type": "plotQA"}
SUB_SCENE = {"video": "subPlot_new_all_126.mp4", "duration": 5632.8,
             "question": "Please describe the scene when the man in the green plaid shirt leads the players into the golf course.",
             "answer": "The man in the green plaid shirt leads the football players into the golf course with a swagger.",
             "question_type": "subPlot", "scoring_points": ["leads the players with a swagger"]}


def test_mlvu_official_json_folder_imports_and_skips_open_ended_files(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _write(tmp_path, "mlvu/json/1_plotQA.json", [PLOT])
    _write(tmp_path, "mlvu/json/8_sub_scene.json", [SUB_SCENE, {**SUB_SCENE, "video": "subPlot_new_all_127.mp4"}])
    with caplog.at_level(logging.WARNING, logger="evr1.eval"):
        records = BENCHMARKS.get("mlvu").load(tmp_path)
    assert [(r.id, r.answer, r.options, r.media[0].path, r.meta["task"]) for r in records] == [
        ("mlvu/1_plotQA/1", "A", ["Yellow", "Red", "Green", "Blue"], "mlvu/video/1_plotQA/movie101_66.mp4", "plotQA")]
    skips = [m for m in caplog.messages if "8_sub_scene.json" in m]
    assert len(skips) == 1 and "skipping its open-ended sub-scene captioning rows" in skips[0]


def test_mlvu_lmms_eval_rows_still_import(tmp_path: Path) -> None:
    _write(tmp_path, "mlvu/json/dev.json", [{"video_name": "movie101_66.mp4", "question": "Colour?",
                                             "candidates": ["Yellow", "Red"], "answer": "Red", "task_type": "plotQA"}])
    (record,) = BENCHMARKS.get("mlvu").load(tmp_path)
    assert (record.answer, record.media[0].path, record.meta["task"]) == ("B", "mlvu/video/movie101_66.mp4", "plotQA")


def test_mlvu_choice_row_without_candidates_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, "mlvu/json/1_plotQA.json", [{k: v for k, v in PLOT.items() if k != "candidates"}])
    with pytest.raises(RecordError, match="1_plotQA.json:1: field 'candidates'"):
        BENCHMARKS.get("mlvu").load(tmp_path)


# -- MMVU and Video-MMMU -------------------------------------------------------------------------

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
    _write(tmp_path, "mmvu/validation.json", MMVU_ROWS)
    records = BENCHMARKS.get("mmvu").load(tmp_path)
    assert [(r.id, r.problem_type.value, r.answer, r.media[0].path, r.meta["category"]) for r in records] == [
        ("mmvu/validation_0", "open_ended", "Dolly Zoom", "mmvu/videos/Art/0.mp4", "Art"),
        ("mmvu/validation_1", "multiple_choice", "A", "mmvu/videos/Chemistry/0.mp4", "Chemistry"),
    ]


def test_mmvu_row_without_a_video_names_both_accepted_fields(tmp_path: Path) -> None:
    _write(tmp_path, "mmvu/validation.json", [{k: v for k, v in MMVU_ROWS[1].items() if k != "video"}])
    with pytest.raises(RecordError, match=r"video \(official validation.json\) or video_path \(lmms-eval rows\)"):
        BENCHMARKS.get("mmvu").load(tmp_path)


def test_video_mmmu_official_nested_files_import_with_track_ids(tmp_path: Path) -> None:
    # The tracks share ids (dev_Biology_3 is in all three): ids are <Track>/<id>.
    item = {"id": "dev_Biology_3", "link_selected": "https://www.youtube.com/watch?v=U7YqCUd_ZfA",
            "question": "How many carbon atoms do they have?", "options": ["3, 3", "3, 4", "3, 5"], "answer": "B"}
    numeric = {"id": "validation_Chemistry_13", "link_selected": "https://www.youtube.com/watch?v=TpylyLZisTU",
               "question": "What mass was dissolved? <image 1>", "options": [], "answer": "12.97", "question_type": "open"}
    _write(tmp_path, "video_mmmu/Perception.json", {"Perception": {"0": item}})
    _write(tmp_path, "video_mmmu/Adaptation.json", {"Adaptation": {"0": {**item, "question_type": "multiple-choice"}, "1": numeric}})
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
    _write(tmp_path, "video_mmmu/Perception.json", {"perception": {"0": {"question": "Q?"}}})
    with pytest.raises(RecordError, match=r"Perception.json:1: .*\{\"Perception\": \{index: row\}\}"):
        BENCHMARKS.get("video_mmmu").load(tmp_path)


# -- letter_of ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("answer", "options", "letter"), [
    ("A dog.", ["The cat", "A dog"], "B"),  # option text wins over a leading capital
    ("a DOG", ["The cat", "A dog"], "B"),
    ("B. right", ["left", "right", "up"], "B"),
    ("(C)", ["x", "y", "z"], "C"),
    ("(B) y", ["x", "y"], "B"),
    ("A:", ["x", "y"], "A"),
    ("B)", ["x", "y"], "B"),
    ("B", ["A", "B"], "B"),
    ("A", ["B", "A"], "B"),  # an option named "A" is that option
    (0, ["x", "y"], "A"),
])
def test_letter_of_table(answer: object, options: list[str], letter: str) -> None:
    assert letter_of(answer, options) == letter


@pytest.mark.parametrize(("answer", "options"), [
    ("A. y", ["x", "y"]),  # a letter with another option's text
    ("C", ["x", "y"]),
    ("A cat", ["The cat", "A dog"]),
    ("x.", ["x", "X!"]),  # loosely equal to two options
    (2, ["x", "y"]),
])
def test_letter_of_refuses(answer: object, options: list[str]) -> None:
    with pytest.raises(ValueError, match="not one of 2 options|out of range"):
        letter_of(answer, options)


_WORDS = st.text(alphabet="ABCdefg xyz.:()", min_size=1, max_size=10).filter(lambda t: t.strip(" .:"))
OPTIONS = st.lists(_WORDS, min_size=2, max_size=6).filter(
    lambda opts: len({" ".join(o.casefold().split()).rstrip(" .") for o in opts}) == len(opts))


def _loosely_an_option(text: str, options: list[str]) -> bool:
    def norm(t: str) -> str:
        return " ".join(t.casefold().split()).rstrip(" .。!?;")
    return any(norm(text) == norm(o) for o in options)


@given(OPTIONS, st.data())
def test_letter_of_finds_each_option_text(options: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(options) - 1))
    assert letter_of(options[i], options) == LETTERS[i]
    try:
        loose = letter_of(f"  {options[i].upper()} ", options)
    except ValueError as exc:  # the upper-cased text is also a letter naming another option ("A" among "x", "a")
        assert "by its text but as the letter" in str(exc)
    else:
        assert loose == LETTERS[i]


def test_letter_of_refuses_text_and_letter_naming_two_options() -> None:
    with pytest.raises(ValueError, match="reads as option A by its text but as the letter B"):
        letter_of("B", ["b", "a", "c"])


@given(OPTIONS, st.data())
def test_letter_of_reads_letter_forms(options: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(options) - 1))
    letter = LETTERS[i]
    form = data.draw(st.sampled_from([letter, f"({letter})", f"{letter}.", f"{letter}:", f"{letter})",
                                      f"{letter}. {options[i]}", f"({letter}) {options[i]}"]))
    assume(not _loosely_an_option(form, options))
    assert letter_of(form, options) == letter


@given(OPTIONS, st.data())
def test_letter_of_never_reads_a_capital_before_text_as_a_letter(options: list[str], data: st.DataObject) -> None:
    letter = LETTERS[data.draw(st.integers(0, len(options) - 1))]
    answer = f"{letter} {data.draw(_WORDS).strip()}"
    assume(not _loosely_an_option(answer, options))
    with pytest.raises(ValueError):
        letter_of(answer, options)


@given(OPTIONS)
def test_letter_of_refuses_a_letter_past_the_options(options: list[str]) -> None:
    letter = LETTERS[len(options)]
    assume(not _loosely_an_option(letter, options))
    with pytest.raises(ValueError):
        letter_of(letter, options)


# -- aggregation: LVBench, Video-MME-v2, VideoMathQA ----------------------------------------------


def _row(score: float, **meta: Any) -> dict[str, Any]:
    return {"score": score, "meta": meta}


def test_lvbench_counts_a_question_under_each_of_its_types() -> None:
    rows = [_row(1, category=["entity recognition", "reasoning"]), _row(0, category=["reasoning"]), _row(0, category="summarization")]
    result = BENCHMARKS.get("lvbench").aggregate(rows)
    assert result.score == pytest.approx(100 / 3)
    assert result.breakdowns["category"] == {"entity recognition": (100.0, 1), "reasoning": (50.0, 2), "summarization": (0.0, 1)}


def test_lvbench_importer_keeps_every_type(tmp_path: Path) -> None:
    _write(tmp_path, "lvbench/lvbench.json", [{"uid": 7, "video_path": "v.mp4", "question": "Who?\n(A) a\n(B) b",
                                               "answer": "B", "question_type": ["entity recognition", "reasoning"]}])
    (record,) = BENCHMARKS.get("lvbench").load(tmp_path)
    assert record.meta["category"] == ["entity recognition", "reasoning"]


def _v2(gid: str, right: list[int], gtype: str, levels: list[int], struct: str = "[1, 2, 3, 4]", head: str = "h") -> list[dict[str, Any]]:
    return [_row(s, group_id=gid, question_id=f"{gid}-{i}", group_type=gtype, group_structure=struct, level=lv,
                 second_head=f"{head}{lv}") for i, (s, lv) in enumerate(zip(right, levels), 1)]


def test_videomme_v2_breakdowns_are_group_scores_labelled_by_the_last_question() -> None:
    # g1: relevance, level 1, 3/4 right -> 9/16. g2: logic [1,2,3,4], right [T,T,F,T] -> chain 2 -> 4/16; its questions
    # are levels 2,2,2,3: the group counts under level 3 (its last question). g3: relevance, level 1, 4/4 -> 1.
    # Listed out of order: the order is the question number, not the row order.
    g2 = _v2("g2", [1, 1, 0, 1], "logic", [2, 2, 2, 3])
    rows = [*_v2("g1", [1, 1, 1, 0], "relevance", [1] * 4), g2[3], *g2[:3], *_v2("g3", [1, 1, 1, 1], "relevance", [1] * 4)]
    result = agg.grouped_nonlinear()(rows)
    assert result.score == pytest.approx(100 * (9 / 16 + 4 / 16 + 1) / 3)
    assert result.breakdowns["level"] == {"1": (pytest.approx(100 * (9 / 16 + 1) / 2), 2), "3": (25.0, 1)}
    assert result.breakdowns["group_type"] == {"logic": (25.0, 1), "relevance": (pytest.approx(100 * (9 / 16 + 1) / 2), 2)}
    assert result.breakdowns["second_head"] == {"h1": (pytest.approx(100 * (9 / 16 + 1) / 2), 2), "h3": (25.0, 1)}
    assert result.metrics["relevance_linear_score"] == pytest.approx((75 + 100) / 2)
    assert result.metrics["accuracy"] == pytest.approx(100 * 10 / 12)


def test_videomath_breakdowns_report_mbin_and_mcq_apart() -> None:
    # MBin: q1 (Counting) both pairs right, q2 (Counting) one wrong, q3 (Geometry) right -> Counting 50 (2), Geometry 100 (1).
    # MCQ: m1 (Counting) wrong.
    rows = [_row(1, setting="mbin", question_id="q1", category="Counting"), _row(1, setting="mbin", question_id="q1", category="Counting"),
            _row(1, setting="mbin", question_id="q2", category="Counting"), _row(0, setting="mbin", question_id="q2", category="Counting"),
            _row(1, setting="mbin", question_id="q3", category="Geometry"), _row(0, setting="mcq", question_id="m1", category="Counting")]
    result = agg.videomath("category")(rows)
    assert result.score == pytest.approx(200 / 3)
    assert result.breakdowns == {"category (MBin)": {"Counting": (50.0, 2), "Geometry": (100.0, 1)},
                                 "category (MCQ)": {"Counting": (0.0, 1)}}
