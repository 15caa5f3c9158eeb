"""The eight QA benchmarks that reuse a stock lmms-eval task, on local data, through real lmms-eval.

Their fixtures (official annotation formats, generated videos) are bound to `evals/` once per
module; each benchmark's documents must load, its first prompt show the question and the lettered
options with our absolute video path, and two scripted runs (right / wrong / unparseable answers,
responses in record order) must give the hand-computed numbers on the stock metric scales; Video-MME-v2's and
MotionBench's metrics (sub-scores and breakdown entries) must also equal `evr1 eval run`'s official block.
The document-field helpers (`doc_fields`) and the shared result helpers (`scoring.response_of`,
`percent`, `fraction`) are checked on their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evr1.data.records import Record
from evr1.eval.fixtures import write_fixtures
from evr1.eval.lmms.doc_fields import (
    answer_index,
    answer_letter,
    answer_text,
    lettered,
    option_texts,
    required,
    source_id,
    video_name,
    video_stem,
)
from evr1.eval.lmms.model import ScriptedChat
from evr1.eval.lmms.scoring import fraction, percent, response_of
from evr1.eval.lmms.tasks import bind
from evr1.registry import BENCHMARKS

NONE = "???"  # no option letter in any extractor: unparseable
NAN = float("nan")  # a sub-score the items lack (no metric)


@dataclass(frozen=True)
class Case:
    benchmark: str
    prompt: tuple[str, ...]  # the first document's question and options, as the prompt shows them
    video: str  # its video, relative to the data root
    runs: tuple[tuple[str, ...], tuple[str, ...]]  # two scripted runs: responses in record order
    expected: tuple[dict[str, float], dict[str, float]]  # lmms-eval metrics of each run (stock scales)
    unparseable: float = 0.0  # the first metric when every answer is unparseable (never a random draw)

    @property
    def task(self) -> str:
        return f"evr1_{self.benchmark}"


CASES = [
    # answers A, C, B; official: an answer without a capital A-D is dropped. Run 1: right, wrong, dropped -> 1/2.
    # Run 2: right, right, empty (dropped) -> 2/2 (percent).
    Case("videomme", ("How many squares?", "A. 1\nB. 2\nC. 3\nD. 4"), "videomme/data/v1.mp4",
         (("A", "The answer is B.", NONE), ("(A)", "C. blue", "")),
         ({"videomme_perception_score": 50.0}, {"videomme_perception_score": 100.0})),
    # relevance group g1 (A B C D, level 1), logic group g2 [1, [2, 3], 4] (E F G H, level 2); official: the first
    # capital A-H after the prefixes ("Because B" reads B, "Clearly, D" reads C), an unread answer marked -1.
    # Run 1: g1 marks [1, 1, 0, -1] -> count 1 -> 1/16 (linear 1/4); g2 [1, 0, 1, -1] -> chain 1, 3 stands in for
    # 2 -> 2 -> 4/12. Accuracy over the 6 read: 4/6. Run 2: g1 all right -> 1; g2 first wrong -> chain 0 -> 0;
    # accuracy 7/8. No level-3 group: NaN.
    Case("videomme_v2", ("Relevance question 1?", "\n".join(f"{c}. option {c}" for c in "ABCDEFGH")),
         "videomme_v2/videos/g1.mp4",
         (("A", "B", "A", NONE, "E", "A", "G", NONE), ("A", "Because B", "Clearly, D", "D", "A", "F", "G", "H")),
         ({"videomme_v2_overall_score": 100 * (1 / 16 + 4 / 12) / 2, "videomme_v2_relevance_score": 100 / 16,
           "videomme_v2_logic_score": 100 * 4 / 12, "videomme_v2_relevance_linear_score": 25.0,
           "videomme_v2_overall_acc": 100 * 4 / 6, "videomme_v2_level_1_score": 100 / 16,
           "videomme_v2_level_2_score": 100 * 4 / 12, "videomme_v2_level_3_score": NAN},
          {"videomme_v2_overall_score": 50.0, "videomme_v2_relevance_score": 100.0, "videomme_v2_logic_score": 0.0,
           "videomme_v2_relevance_linear_score": 100.0, "videomme_v2_overall_acc": 87.5,
           "videomme_v2_level_1_score": 100.0, "videomme_v2_level_2_score": 0.0, "videomme_v2_level_3_score": NAN}),
         unparseable=50.0),  # all -1: relevance count -4 -> 0; a logic chain of four -1 -> 1
    # answers C (3 options), A (options inside the question); official: the first character of the first word, after
    # "(" and before ")" ("The answer is C" reads T). Fractions; failed generations read "" here: answered_acc = acc.
    Case("motionbench", ("What motion?", "A. wave\nB. jump\nC. spin"), "motionbench/videos/m1.mp4",
         (("C", NONE), ("The answer is C", "(A) left")),
         ({"motionbench_acc": 0.5, "motionbench_answered_acc": 0.5, "motionbench_motion_recognition": 1.0,
           "motionbench_location_related_motion": 0.0, "motionbench_camera_motion": NAN},
          {"motionbench_acc": 0.5, "motionbench_answered_acc": 0.5, "motionbench_motion_recognition": 0.0,
           "motionbench_location_related_motion": 1.0, "motionbench_action_order": NAN})),
    # answers D, B, A; official: the first character of the first word ("The answer is A" reads T). Fractions.
    Case("lvbench", ("What happens first?", "(A) a\n(B) b\n(C) c\n(D) d"), "lvbench/videos/lv1.mp4",
         (("D", "C", NONE), ("(D)", "B", "The answer is A")),
         ({"lvbench_score": 1 / 3}, {"lvbench_score": 2 / 3})),
    # answers E (5 options), A (4 options); official: no letter scores the expected value of the random letter,
    # 1/4 on the second. Run 1: (1 + 1/4) / 2; run 2: (0 + 1/4) / 2. Fractions.
    Case("longvideobench", ("What is shown?", "A. a\nB. b\nC. c\nD. d\nE. e"), "longvideobench/videos/lvb1.mp4",
         (("E", NONE), ("D", "")),
         ({"lvb_acc": 0.625}, {"lvb_acc": 0.125}), unparseable=(0.2 + 0.25) / 2),
    # plotQA: B, D; count: F (6 options). M-Avg over the two task types present (percent); official: the response cut
    # character just before its first ")" is the letter (choice_bench.py at HEAD). Run 1: plotQA 1/2, count 1/1 -> 75.
    # Run 2: "A" 0, "(D)" reads D: plotQA 1/2, count 0 -> 25.
    Case("mlvu", ("What is the plot?", "(A) x\n(B) y\n(C) z\n(D) w"), "mlvu/video/1_plotQA/ml1.mp4",
         (("B", NONE, "F"), ("A", "(D)", "E")),
         ({"mlvu_percetion_score": 75.0}, {"mlvu_percetion_score": 25.0})),
    # SR: F, IMC: A (percent); official: the first of A-F written "X ", "X:" or "[X", else the first anywhere
    # ("The correct answer is (B)." reads B).
    Case("video_holmes", ("Why?", "A. a\nB. b\nC. c\nD. d\nE. e\nF. f"), "video_holmes/videos/h1.mp4",
         (("F", NONE), ("The correct answer is (B).", "A")),
         ({"video_holmes_accuracy": 50.0, "video_holmes_SR": 100.0, "video_holmes_IMC": 0.0},
          {"video_holmes_accuracy": 50.0, "video_holmes_SR": 0.0, "video_holmes_IMC": 100.0})),
    # answers D (answer_id 3), A (percent); official: no letter scores the expected value of the random letter, 1/5.
    # Run 1: (1 + 0.2) / 2; run 2: "Answer: C" wrong, "" 0.2 -> 10.
    Case("minerva", ("Which step?", "A. step 0\nB. step 1\nC. step 2\nD. step 3\nE. step 4"), "minerva/videos/mi.mp4",
         (("D", NONE), ("Answer: C", "")),
         ({"minerva_acc": 60.0}, {"minerva_acc": 10.0}), unparseable=20.0),
]
NAMES = [c.benchmark for c in CASES]


@dataclass
class Bound:
    root: Path
    tasks: dict[str, Any]  # lmms-eval chat tasks by name
    ids: dict[str, list[str]]  # document ids by task, in record order
    results: tuple[dict[str, Any], dict[str, Any]]  # simple_evaluate's `results` of the two runs


@pytest.fixture(scope="module")
def bound(lmms_env: Path) -> Bound:
    """The eight benchmarks written, bound, loaded, and evaluated with both scripted runs (once per module)."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager, get_task_dict

    counts = write_fixtures(lmms_env / "data", NAMES)
    bounds = bind(lmms_env / "data", lmms_env / "tasks", NAMES)
    assert [b.tasks for b in bounds] == [{f"evr1_{n}": counts[n]} for n in NAMES]
    manager = TaskManager(include_path=[str(lmms_env / "tasks")], include_defaults=False)
    tasks = get_task_dict([c.task for c in CASES], manager, task_type="chat")
    ids = {name: [d["evr1_id"] for d in task.test_docs()] for name, task in tasks.items()}
    results = []
    for run in (0, 1):
        table = {i: text for c in CASES for i, text in zip(ids[c.task], c.runs[run], strict=True)}
        out = simple_evaluate(model=ScriptedChat(table), tasks=[c.task for c in CASES], task_manager=manager, log_samples=True)
        assert out is not None, "lmms-eval returned no results"
        results.append(out["results"])
    return Bound(lmms_env / "data", tasks, ids, (results[0], results[1]))


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_prompt_shows_question_options_and_our_video(bound: Bound, case: Case) -> None:
    task = bound.tasks[case.task]
    first = next(iter(task.test_docs()))
    [message] = task.doc_to_messages(first)
    videos = [c for c in message["content"] if c["type"] == "video"]
    [text] = [c["text"] for c in message["content"] if c["type"] == "text"]
    assert [v["url"] for v in videos] == [str((bound.root / case.video).resolve())]
    for part in case.prompt:
        assert part in text, f"{case.task}: {part!r} not in the prompt {text!r}"


@pytest.mark.parametrize("run", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_scripted_run_gives_hand_computed_metrics(bound: Bound, case: Case, run: int) -> None:
    results = bound.results[run][case.task]
    for metric, value in case.expected[run].items():
        assert results[f"{metric},none"] == pytest.approx(value, nan_ok=True), f"{case.task} run {run}: {metric}"


@pytest.mark.parametrize("case", CASES, ids=NAMES)
def test_unparseable_answers_never_draw_a_random_letter(bound: Bound, case: Case) -> None:
    """Scored 30 times per document: a random-letter fallback (stock LongVideoBench, Video-Holmes, MINERVA) would hit;
    the official block scores its expected value instead (LongVideoBench, MINERVA), else 0."""
    task = bound.tasks[case.task]
    metric = next(iter(case.expected[0]))
    items = [task.process_results(doc, [NONE])[metric] for doc in task.test_docs() for _ in range(30)]
    assert task.aggregation()[metric](items) == pytest.approx(case.unparseable)


def test_every_benchmark_has_a_converter_and_a_case() -> None:
    assert all(BENCHMARKS.get(name).lmms_doc is not None for name in NAMES)


def _record(answer: str, options: list[str]) -> Record:
    return Record(id="minerva/x", problem="Q?", problem_type="multiple_choice", answer=answer, options=options,
                  media=[{"kind": "video", "path": "minerva/videos/x.mp4"}])


@pytest.mark.parametrize(("name", "record", "message"), [
    ("minerva", _record("B", ["a", "b", "c"]), "MINERVA questions have 5 choices"),
    ("lvbench", _record("B", ["a", "b", "c", "d", "e"]), "at most 4"),
    ("videomme", _record("E", ["a", "b", "c", "d"]), "not one of its option letters"),
    ("mlvu", _record("A", ["a", "b"]), "meta field 'task'"),
])
def test_converter_errors_name_the_record(name: str, record: Record, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        BENCHMARKS.get(name).lmms_doc(record, {})
    assert "minerva/x" in str(info.value)


def _mc(answer: str, options: list[str], **meta: str) -> Record:
    return Record(id="videomme/q-7", problem="Q?", problem_type="multiple_choice", answer=answer, options=options,
                  media=[{"kind": "video", "path": "videomme/data/clip.v2.mp4"}], meta=meta)


@pytest.mark.parametrize(("answer", "index", "letter", "text"), [(" c ", 2, "C", "z"), ("a", 0, "A", "x"), ("B", 1, "B", "y")])
def test_answer_is_normalised_and_located(answer: str, index: int, letter: str, text: str) -> None:
    record = _mc(answer, ["x", "y", "z"])
    assert (answer_index(record), answer_letter(record), answer_text(record)) == (index, letter, text)


@pytest.mark.parametrize("answer", ["D", "AB", "", "1"])
def test_answer_outside_the_options_is_an_error_naming_the_record(answer: str) -> None:
    with pytest.raises(ValueError, match=r"record 'videomme/q-7': answer .* is not one of its option letters"):
        answer_index(_mc(answer, ["x", "y", "z"]))


def test_document_fields_of_a_record() -> None:
    record = _mc("A", ["x", "y"], task="count")
    assert (source_id(record), video_name(record), video_stem(record)) == ("q-7", "clip.v2.mp4", "clip.v2")
    assert lettered(["x", "y"]) == ["A. x", "B. y"]
    assert lettered(["x", "y"], "({letter}) {text}") == ["(A) x", "(B) y"]
    assert required(record, "task") == "count"
    with pytest.raises(ValueError, match="record 'videomme/q-7': meta field 'domain' is missing"):
        required(record, "domain")
    with pytest.raises(ValueError, match="record 'videomme/q-7': 3 options, the stock task shows at most 2"):
        option_texts(_mc("A", ["x", "y", "z"]), most=2)
    with pytest.raises(ValueError, match="needs at least two options"):
        option_texts(_mc("A", ["x"]))
    with pytest.raises(ValueError, match="record 'videomme/q-7' has no video"):
        video_name(record.model_copy(update={"media": []}))


@pytest.mark.parametrize(("results", "text"), [(["B"], "B"), ([["C"]], "C"), ([None], ""), ([], ""), ([[]], ""), ([7], "7")])
def test_response_of_lmms_results(results: list, text: str) -> None:
    assert response_of(results) == text


@pytest.mark.parametrize(("scores", "pct", "frac"), [([1, 0, 0.5, 1], 62.5, 0.625), ([0, 0], 0.0, 0.0), ([], 0.0, 0.0)])
def test_mean_of_score_in_percent_and_fraction(scores: list[float], pct: float, frac: float) -> None:
    rows = [{"score": s} for s in scores]
    assert (percent(rows), fraction(rows)) == (pct, frac)


# Where each lmms-eval metric of the two grouped/tabled tasks sits in `evr1 eval run`'s official block:
# (table or None, metric name or breakdown label, scale).
OFFICIAL_PLACES = {
    "videomme_v2": {"videomme_v2_overall_score": (None, "group_score", 1.0),
                    "videomme_v2_relevance_score": (None, "relevance_score", 1.0),
                    "videomme_v2_logic_score": (None, "logic_score", 1.0),
                    "videomme_v2_relevance_linear_score": (None, "relevance_linear_score", 1.0),
                    "videomme_v2_overall_acc": (None, "accuracy", 1.0),
                    "videomme_v2_level_1_score": ("level", "1", 1.0), "videomme_v2_level_2_score": ("level", "2", 1.0)},
    "motionbench": {"motionbench_acc": (None, "acc", 0.01), "motionbench_answered_acc": (None, "answered_acc", 0.01),
                    "motionbench_motion_recognition": ("category", "Motion Recognition", 0.01),
                    "motionbench_location_related_motion": ("category", "Location-related Motion", 0.01)},
}


@pytest.mark.parametrize("run", [0, 1])
def test_grouped_and_tabled_metrics_equal_evr1_official_block(bound: Bound, run: int, tmp_path: Path) -> None:
    """Video-MME-v2 and MotionBench through lmms-eval: each metric equals its place in `evr1 eval run`'s official block
    on the same responses (headline, sub-scores and breakdown entries)."""
    from evr1.eval.api import evaluate
    from evr1.eval.responders import ScriptedResponder
    from evr1.specs import EvalSpec

    cases = {c.benchmark: c for c in CASES if c.benchmark in OFFICIAL_PLACES}
    table = {i: text for c in cases.values() for i, text in zip(bound.ids[c.task], c.runs[run], strict=True)}
    ours = evaluate(EvalSpec(), ScriptedResponder(table), tmp_path / "evr1", benchmarks=list(cases),
                    data_root=bound.root)["benchmarks"]
    for name, places in OFFICIAL_PLACES.items():
        block = ours[name]["protocols"]["official"]
        for metric, (where, key, scale) in places.items():
            value = block["metrics"][key] if where is None else block["breakdowns"][where][key]["score"]
            got = bound.results[run][f"evr1_{name}"][f"{metric},none"]
            assert got == pytest.approx(value * scale, abs=1e-12), f"{name} run {run}: {metric}"
