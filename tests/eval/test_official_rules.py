"""The official protocol's departures from evr1's strict rules, benchmark by benchmark: tables of predictions with
the numbers the official rules give, worked out by hand (and, for VSI-Bench, by running lmms-eval's own scorer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.eval import official_choice as choice
from evr1.eval import official_formats as formats
from evr1.eval import official_rules as rules
from evr1.eval.protocols import block
from evr1.registry import BENCHMARKS


def row(answer: Any, response: str | None, score: float = 0.0, ptype: str = "multiple_choice", error: str | None = None,
        **meta: Any) -> dict[str, Any]:
    """A sample row as the runner writes it (`score`: evr1's strict item score)."""
    return {"id": f"x/{len(meta)}", "benchmark": "x", "problem_type": ptype, "response": response, "answer": answer,
            "score": score, "parsed": None if response in (None, "") else response, "error": error, "components": {},
            "meta": meta}


# pieces of generated answers for the reader-equivalence properties
_PIECES = st.sampled_from(["A", "B", "C", "D", "E", "(", ")", ".", ":", " ", ",", "!", "'", '"', "x", "is", "Answer",
                           "the answer is ", "The answer is ", "Best option: ", "I choose ", "答案是", "\n", "Bob", "a"])


def both(name: str, rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    bench = BENCHMARKS.get(name)
    return block(bench, rows, "official"), block(bench, rows, "strict")


# -- MVBench: the leaderboard's Avg is correct / total ------------------------------------------------------------


@pytest.mark.parametrize(("response", "right"), [
    ("A", 1.0), ("a.", 1.0), ("A) the cat", 1.0), ("(A)", 1.0), ("A or B", 1.0),  # the first word decides
    ("The answer is A", 0.0), ("B", 0.0), ("Z", 0.0), ("AB", 0.0),
    ("", 1.0),  # the official check's quirk: "" lies inside "(a)"
    (None, 0.0),  # a failed generation: no response to check
])
def test_mvbench_first_word_check(response: str | None, right: float) -> None:
    assert choice.mvbench_item(row("A", response)) == right


def test_mvbench_avg_is_correct_over_total_with_unequal_task_sizes() -> None:
    rows = [row("A", "A", 1, task="a"), row("A", "A", 1, task="a"), row("A", "B", 0, task="a"),
            row("B", None, 0, task="b", error="generation failed")]
    official, strict = both("mvbench", rows)
    assert official["score"] == pytest.approx(50.0)  # 2 / 4
    assert official["metrics"] == pytest.approx({"Avg": 50.0})
    assert strict["score"] == pytest.approx((200 / 3 + 0) / 2)  # the task mean: 33.33
    assert official["breakdowns"]["task"] == {"a": {"score": pytest.approx(200 / 3), "n": 3}, "b": {"score": 0.0, "n": 1}}
    assert official["n"] == 4 and official["dropped"] == 0


# -- Video-MME: the first capital A-D after the official prefixes; none drops the item ------------------------------


@pytest.mark.parametrize(("response", "score"), [
    ("A", 1.0), ("The answer is A.", 1.0), ("(A) a cat", 1.0),
    ("Best option: A", 0.0),  # "Best option:" is no prefix of the official list (a missing comma): "B" of "Best" is read
    ("The best option is A", 1.0),  # not a prefix either, but it holds no capital A-D
    ("Because the cat left, A", 0.0),  # "B" of "Because" is the first capital A-D
    ("a", None), ("", None), (None, None),  # no capital letter A-D: dropped (not answered)
    ("I think it is the one on the left side of the room near the door", None),
    ("A or B", 1.0), ("E", None),
])
def test_videomme_official_reader(response: str | None, score: float | None) -> None:
    assert choice.videomme_item(row("A", response)) == score


def test_videomme_accuracy_over_answered_items() -> None:
    rows = [row("A", "A", 1, duration="short", domain="Knowledge", category="Law", task="OCR Problems"),
            row("B", "b", 1, duration="short", domain="Knowledge", category="Law", task="OCR Problems"),  # dropped
            row("C", "D", 0, duration="long", domain="Sports Competition", category="Football", task="Counting Problem"),
            row("D", None, 0, error="generation failed", duration="long", domain="Sports Competition", category="Football",
                task="Counting Problem")]  # dropped
    official, strict = both("videomme", rows)
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 2)
    assert strict["score"] == 50.0 and strict["n"] == 4
    assert official["breakdowns"]["duration"] == {"long": {"score": 0.0, "n": 1}, "short": {"score": 100.0, "n": 1}}
    assert set(official["breakdowns"]) == {"duration", "domain", "category", "task"}


# -- VideoMathQA and LongVideoBench: Video-MME's reader with A-E ----------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(text=st.lists(_PIECES, max_size=12).map("".join))
def test_first_capital_equals_lmms_evals_readers(text: str) -> None:
    """VideoMathQA's extract_characters_regex ("" for none) and LongVideoBench's parser (random for none)."""
    from lmms_eval.tasks.longvideobench import utils as lvb
    from lmms_eval.tasks.videomathqa import utils as vmqa

    assert (choice.first_capital(text, choice.VIDEOMME_PREFIXES, "ABCDE") or "") == vmqa.extract_characters_regex(text)
    found = choice.first_capital(text.strip(), choice.LONGVIDEOBENCH_PREFIXES, "ABCDE")
    if found is not None:
        assert found == lvb.parse_multi_choice_response(text, list("ABCD"), {})


def test_videomathqa_counts_unread_answers_and_mbin_needs_every_pair() -> None:
    rows = [row("A", "Answer: A", 1, setting="mcq", question_id="1", category="geo"),  # "A" of "Answer" is read: right
            row("B", "Answer: B", 1, setting="mcq", question_id="2", category="geo"),  # ... and here wrong
            row("C", "c", 1, setting="mcq", question_id="3", category="geo"),  # no capital: wrong, counted
            row("A", "A", 1, setting="mbin", question_id="4", category="geo"), row("B", "B", 1, setting="mbin", question_id="4",
                                                                               category="geo"),
            row("A", "A", 1, setting="mbin", question_id="5", category="geo"), row("A", "", 0, setting="mbin", question_id="5",
                                                                               category="geo")]
    official = block(BENCHMARKS.get("videomathqa"), rows, "official")
    assert official["metrics"]["MCQ"] == pytest.approx(100 / 3) and official["n"] == 7
    assert official["metrics"]["MBin"] == 50.0 and official["score"] == 50.0


@pytest.mark.parametrize(("response", "options", "score"), [
    ("B", 4, 1.0), ("The answer is B.", 4, 1.0), ("D. A book", 4, 0.0),  # the first capital: D
    ("none", 4, 0.25), ("", 5, 0.2),  # no letter: the random guess's expected score
    (None, 4, 0.0),  # a failed generation: no response to guess for
])
def test_longvideobench_reader_and_its_random_guess(response: str | None, options: int, score: float) -> None:
    got = choice.longvideobench_item({**row("B", response), "options": [str(i) for i in range(options)]})
    assert got == pytest.approx(score)


# -- LVBench: the polished first character -----------------------------------------------------------------------


@pytest.mark.parametrize(("response", "score"), [
    ("B", 1.0), ("(B) the dog", 1.0), ("B. the dog", 1.0), ("B or C", 1.0), (" ( B ) ", 1.0),
    ("The answer is B", 0.0),  # "T"
    ("b", 0.0), ("", 0.0), ("C", 0.0),
    (None, None),  # no answer recorded: not in the answers file, left out
])
def test_lvbench_polished_letter(response: str | None, score: float | None) -> None:
    assert choice.lvbench_item(row("B", response)) == score


def test_lvbench_types_count_a_question_under_each() -> None:
    rows = [row("A", "A", 1, category=["key information retrieval", "reasoning"]), row("B", "(C)", 0, category=["reasoning"]),
            row("C", None, 0, error="generation failed", category=["reasoning"])]
    official = block(BENCHMARKS.get("lvbench"), rows, "official")
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 2, 1)
    assert official["breakdowns"]["category"] == {"key information retrieval": {"score": 100.0, "n": 1},
                                                  "reasoning": {"score": 50.0, "n": 2}}


def test_motionbench_acc_over_all_and_answered() -> None:
    rows = [row("A", "(A) walks", 1, category="MR"), row("B", "The answer is B", 1, category="MR"),  # reads "T"
            row("C", None, 0, error="generation failed", category="CM")]
    official, strict = both("motionbench", rows)
    assert official["score"] == pytest.approx(100 / 3) and official["metrics"]["answered_acc"] == 50.0
    assert official["breakdowns"]["category"]["CM"] == {"score": 0.0, "n": 1} and official["dropped"] == 0
    assert strict["score"] == pytest.approx(200 / 3)


@settings(max_examples=150, deadline=None)
@given(text=st.lists(_PIECES, max_size=12).map("".join))
def test_minerva_letter_equals_lmms_evals_reader(text: str) -> None:
    from lmms_eval.tasks.minerva import utils as reference

    assert choice.minerva_letter(text) == reference._extract_choice_letter(text)


@pytest.mark.parametrize(("response", "score"), [
    ("B", 1.0), ("the answer is b", 1.0), ("A, no: B", 1.0), ("B, not A", 0.0),  # the last capital
    ("none", 0.2), ("", 0.2),  # lmms-eval's random letter: its expected score
    (None, 0.0),  # a failed generation
])
def test_minerva_item(response: str | None, score: float) -> None:
    assert choice.minerva_item(row("B", response)) == pytest.approx(score)


# -- Video-Holmes: alphabetical letter search ---------------------------------------------------------------------


@pytest.mark.parametrize(("response", "letter"), [
    ("C", "C"), ("<think>maybe A or B</think><answer>D</answer>", "D"), ("<answer>[E]</answer>", "E"),
    ("C: the thief. B is wrong", "B"),  # "B " comes before "C:" alphabetically
    ("The answer is C", "C"),  # "C" alone, no form: the second pass; "T" is no letter A-F
    ("<think>A is tempting</think> so C", "A"),  # no <answer>: the whole response, thinking included
    ("none", None), ("", None), ("G", None),
])
def test_video_holmes_letter(response: str, letter: str | None) -> None:
    assert choice.video_holmes_letter(response) == letter


def test_video_holmes_counts_failures() -> None:
    rows = [row("C", "C", 1, category="SR"), row("A", None, 0, error="generation failed", category="SR"),
            row("B", "<answer>B</answer>", 1, category="TCI")]
    official = block(BENCHMARKS.get("video_holmes"), rows, "official")
    assert (official["score"], official["n"]) == (pytest.approx(200 / 3), 3)
    assert official["breakdowns"]["category"]["SR"] == {"score": 50.0, "n": 2}


# -- Video-MME-v2: the official -1 for an unread answer -----------------------------------------------------------


def _v2(group: str, kind: str, answers: str, responses: list[str | None], structure: str | None = None) -> list[dict]:
    meta = {"group_id": group, "group_type": kind, "level": 2, **({"group_structure": structure} if structure else {})}
    return [{**row(a, r, float(r is not None and r.endswith(a)), **meta, question_id=f"{group}-{i}")}
            for i, (a, r) in enumerate(zip(answers, responses), start=1)]


def test_videomme_v2_unread_answer_lowers_relevance_and_passes_a_logic_chain() -> None:
    rows = [*_v2("g1", "relevance", "ABCC", ["A", "Final Answer: B", "", "C"]),  # marks 1, 1, -1, 1: count 2
            *_v2("g2", "logic", "ABCD", ["A", "none", "B", "D"], "[1, 2, 3, 4]")]  # marks 1, -1, 0, 1: chain 2
    official, strict = both("videomme_v2", rows)
    assert official["metrics"]["relevance_score"] == pytest.approx(100 * 4 / 16)  # count 2 (strict: 3 right, 9/16)
    assert official["metrics"]["logic_score"] == pytest.approx(100 * 4 / 16)  # -1 continues the chain (strict: 1/16)
    assert official["score"] == pytest.approx(25.0) and official["metrics"]["relevance_linear_score"] == 50.0
    assert official["metrics"]["accuracy"] == pytest.approx(500 / 6)  # 5 of the 6 answers read
    assert strict["score"] == pytest.approx(100 * (9 / 16 + 1 / 16) / 2)
    assert official["breakdowns"]["level"] == {"2": {"score": 25.0, "n": 2}}


def test_videomme_v2_reader() -> None:
    assert choice.videomme_v2_item(row("H", "Final Answer: H."))["components"]["mark"] == 1
    assert choice.videomme_v2_item(row("A", "Answer: the dog"))["components"]["mark"] == -1  # "Answer:" is a prefix
    assert choice.videomme_v2_item(row("A", "Because"))["components"]["mark"] == 0  # reads B


# -- OVO-Bench: substring readers, the mean over tasks ------------------------------------------------------------


@pytest.mark.parametrize(("answer", "ptype", "response", "score"), [
    ("B", "multiple_choice", "B", 1.0), ("B", "multiple_choice", "Because of the car", 1.0),  # "B" appears
    ("B", "multiple_choice", "b", 0.0), ("B", "multiple_choice", None, 0.0),
    (3, "numerical", "3", 1.0), (3, "numerical", "I count 3 times", 1.0), (3, "numerical", "3 or 4", 0.0),
    (3, "numerical", "three", 0.0),
    ("yes", "boolean", "Yes, it is", 1.0), ("yes", "boolean", "Y", 1.0), ("yes", "boolean", "yes", 0.0),
    ("no", "boolean", "N", 1.0), ("no", "boolean", "No.", 1.0), ("no", "boolean", "Not yet", 1.0),  # "No" in "Not"
])
def test_ovobench_readers(answer: Any, ptype: str, response: str | None, score: float) -> None:
    assert formats.ovobench_item(row(answer, response, ptype=ptype)) == score


def test_ovobench_total_is_the_mean_over_tasks() -> None:
    rows = [row("A", "A", 1, category="backward", task="EPM"), row("A", "B", 0, category="backward", task="ASI"),
            row("A", "A", 1, category="realtime", task="STU"),
            row(2, "2", 1, "numerical", category="forward", task="REC"), row(2, "5", 0, "numerical", category="forward", task="REC")]
    official, strict = both("ovobench", rows)
    assert official["score"] == pytest.approx((100 + 0 + 100 + 50) / 4)  # 62.5: over the 4 tasks
    assert official["metrics"]["category_mean"] == pytest.approx((50 + 100 + 50) / 3)
    assert strict["score"] == pytest.approx((50 + 100 + 50) / 3)  # evr1's: the mean of the categories


# -- TempCompass: the matching rules (more in test_official_tempcompass.py) ------------------------------------------


@pytest.mark.parametrize(("fmt", "answer", "response", "score"), [
    ("multi-choice", "B", "B. fast", 1.0), ("multi-choice", "B", "A. slow", 0.0),
    ("multi-choice", "B", "The answer is B", 0.0),  # unmatched, no judge verdict: 0
    ("multi-choice", "B", " B</s>", 1.0),  # "</s>" removed, then stripped
    ("multi-choice", "B", None, 0.0), ("yes_no", "no", "no</s>", 1.0), ("yes_no", "no", "Nope", 1.0),
])
def test_tempcompass_matching_rules(fmt: str, answer: str, response: str | None, score: float) -> None:
    got = formats.tempcompass_item({**row(answer, response, format=fmt), "options": ["slow", "fast"]})
    assert got["score"] == score


def test_tempcompass_captioning_without_its_judgement_keeps_evr1s_score() -> None:
    assert formats.tempcompass_item(row("A man runs.", "A man runs", 1.0, "open_ended", format="captioning")) == {
        "score": 1.0}


# -- MLVU: the letter itself, before a ")" ------------------------------------------------------------------------


@pytest.mark.parametrize(("response", "right"), [
    ("A", 1.0), ("A) a cat", 1.0), (" A ", 1.0),
    ("A.", 0.0), ("(A)", 0.0), ("The answer is A", 0.0), ("a", 0.0), ("A or B", 0.0), ("", 0.0), (None, 0.0),
])
def test_mlvu_letter_before_the_parenthesis(response: str | None, right: float) -> None:
    assert choice.mlvu_item(row("A", response)) == right


def test_mlvu_m_avg_with_unequal_task_sizes() -> None:
    rows = [row("A", "A", 1, task="count"), row("B", "B.", 1, task="count"), row("C", "C) x", 1, task="count"),
            row("D", "(D)", 1, task="needle")]
    official, strict = both("mlvu", rows)
    assert official["score"] == pytest.approx((200 / 3 + 0) / 2) and official["metrics"]["M-Avg"] == official["score"]
    assert strict["score"] == pytest.approx(100.0)  # evr1's reader reads all four


# -- VSI-Bench: MRA at np.linspace's thresholds, first-word MC, levels ---------------------------------------------


@pytest.mark.parametrize(("response", "truth", "mra"), [
    ("12", 10.0, 0.6),  # off by exactly 20%: 1 - 0.8 is 0.19999999999999996 in floats, so 6 of 10 thresholds
    ("11", 10.0, 0.9),  # off by 10%: 1 - 0.9 (0.8999999999999999) is 0.10000000000000009: 9 of 10
    ("10", 10.0, 1.0),
    ("15", 10.0, 0.1),  # 50%: only t = 0.5
    ("twenty-one chairs", 21.0, 1.0),  # number words
    ("about 3, maybe 4", 3.0, 1.0),  # the first number
    ("two rooms and 5 doors", 2.0, 1.0),  # a word before the digits wins
    ("no idea", 3.0, 0.0), ("", 3.0, 0.0),
    ("<think>maybe 9</think>4", 4.0, 1.0),  # the think part is not read
])
def test_vsibench_mra_of_the_first_number(response: str, truth: float, mra: float) -> None:
    assert rules.vsibench_item(row(truth, response, ptype="regression")) == pytest.approx(mra)


@pytest.mark.parametrize(("response", "right"), [
    ("A", 1.0), ("a.", 1.0), ("A. the chair", 1.0),
    ("A or B", 1.0),  # the first word decides: a hedge that starts with the right letter scores
    ("The answer is A", 0.0), ("(A)", 0.0), ("B. left", 0.0), ("", 0.0), (None, 0.0),
])
def test_vsibench_multiple_choice_reads_the_first_word(response: str | None, right: float) -> None:
    assert rules.vsibench_item(row("A", response)) == right


def _vsi_table() -> list[dict[str, Any]]:
    direction = [("A", "easy"), ("A", "easy"), ("B", "easy"), ("A", "medium"), ("C", "hard")]  # gt A each time
    return [
        row(10.0, "12", 0.7, "regression", task="object_counting"),
        row(10.0, "10", 1.0, "regression", task="object_counting"),
        *(row("A", r, float(r == "A"), task="object_rel_direction", difficulty=d) for r, d in direction),
        row("A", "The answer is A", 1.0, task="route_planning"),
    ]


def test_vsibench_overall_and_by_task_table_by_hand() -> None:
    official, strict = both("vsibench", _vsi_table())
    counting, direction = (0.6 + 1.0) / 2, (2 / 3 + 1 + 0) / 3  # direction: the mean of its levels, not 3/5
    assert official["score"] == pytest.approx(100 * (counting + direction + 0) / 3)
    tasks = official["breakdowns"]["task"]
    assert tasks["object_rel_direction"] == {"score": pytest.approx(100 * direction), "n": 5}
    assert tasks["object_counting"]["score"] == pytest.approx(80.0) and tasks["route_planning"]["score"] == 0.0
    assert official["metrics"]["object_rel_direction"] == pytest.approx(100 * direction)
    # strict: evr1's MRA (0.7 at 20%), evr1's reader ("The answer is A" is A)
    assert strict["score"] == pytest.approx(100 * ((0.7 + 1) / 2 + direction + 1) / 3)


def test_vsibench_official_equals_lmms_evals_own_scorer() -> None:
    """lmms-eval 0.7.3's vsibench process_results and sub-score computation, run on the same predictions."""
    from lmms_eval.tasks.vsibench import utils as reference

    table = _vsi_table()
    docs = []
    for r in table:
        meta = r["meta"]
        qtype = f"{meta['task']}_{meta['difficulty']}" if "difficulty" in meta else meta["task"]
        doc = {"question_type": qtype, "ground_truth": str(r["answer"]) if qtype != "object_counting" else "10"}
        docs.append(reference.vsibench_process_results(doc, [r["response"]])["vsibench_overall"])
    expected = reference._compute_all_subscores(docs)
    official = block(BENCHMARKS.get("vsibench"), table, "official")
    assert official["score"] == pytest.approx(100 * expected["overall"], abs=1e-9)
    assert official["metrics"]["object_counting"] == pytest.approx(100 * expected["object_counting_MRA:.5:.95:.05"])
    assert official["metrics"]["object_rel_direction"] == pytest.approx(100 * expected["object_rel_direction_accuracy"])


@settings(max_examples=60, deadline=None)
@given(pred=st.floats(0, 1e4, allow_nan=False), truth=st.floats(0.01, 1e4))
def test_vsi_mra_is_a_tenth_count_and_never_beats_exactness(pred: float, truth: float) -> None:
    mra = rules.vsi_mra(pred, truth)
    assert 0.0 <= mra <= 1.0 and round(mra * 10, 9) == round(mra * 10)
    assert rules.vsi_mra(truth, truth) == 1.0


# -- lmms-eval's multiple-choice reader, and Video-MMMU -----------------------------------------------------------


@pytest.mark.parametrize(("response", "letter"), [
    ("B", "B"), ("The answer is (C).", "C"), ("I think A. No wait, the answer is D", "I"),  # "I" stands alone at the start: letter I (rank 10)
    ("So A. No wait, the answer is D", "D"),  # the phrase (7) beats "A." (5) ("a", ""),
    ("Answer: B", "B"), ("(A) or (B)", "B"), ("", ""), ("It is J", "J"), ("none of them", ""),
])
def test_lmms_choice_table(response: str, letter: str) -> None:
    assert choice.lmms_choice(response, list("ABCDEFGHIJ")) == letter


@settings(max_examples=150, deadline=None)
@given(text=st.lists(_PIECES, max_size=12).map("".join), n=st.integers(2, 5))
def test_lmms_choice_equals_lmms_evals_extract_mcq_answer(text: str, n: int) -> None:
    from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer

    choices = list("ABCDE")[:n]
    assert choice.lmms_choice(text, choices) == extract_mcq_answer(text, choices=choices)


# -- Video-MMMU: Overall is the mean of the three tracks ----------------------------------------------------------


def test_video_mmmu_overall_is_the_mean_of_the_tracks() -> None:
    scores = {"Perception": [1, 1], "Comprehension": [0], "Adaptation": [1, 0, 0]}
    rows = [{**row("A", "A" if s else "B", s, track=t), "options": ["x", "y"]} for t, ss in scores.items() for s in ss]
    official, strict = both("video_mmmu", rows)
    assert official["score"] == pytest.approx((100 + 0 + 100 / 3) / 3)  # 44.44
    assert strict["score"] == pytest.approx(50.0)  # 3 / 6
    assert official["breakdowns"]["track"]["Adaptation"] == {"score": pytest.approx(100 / 3), "n": 3}


def test_video_mmmu_reads_letters_beyond_d_and_numbers_officially() -> None:
    options = [str(i) for i in range(10)]
    rows = [{**row("J", "The answer is J.", 0, track="Perception"), "options": options},  # strict read nothing: 0
            {**row("B", "b", 1, track="Perception"), "options": options},  # lower case: no letter for lmms-eval
            row(42.0, "forty-two", 1, "numerical", track="Comprehension")]  # evr1 reads 42; the MMMU parser no number
    official = block(BENCHMARKS.get("video_mmmu"), rows, "official")
    assert official["breakdowns"]["track"]["Perception"]["score"] == 50.0
    assert official["score"] == pytest.approx((50 + 0) / 2)


def test_video_mmmu_tables_by_domain_and_subject_within_each_track() -> None:
    def mmmu(track: str, subject: str, right: bool) -> dict[str, Any]:
        domain = {"Art": "Art and Design", "Music": "Art and Design", "Math": "Science"}[subject]
        return {**row("A", "A" if right else "B", float(right), track=track, track_subject=f"{track}: {subject}",
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


# -- Charades-STA: the span the task's reader takes, as given ---------------------------------------------------------


@pytest.mark.parametrize(("response", "iou"), [
    ("4 - 10", 0.25),  # past the clip's end: not trimmed (2 / 8)
    ("6 - 4", 0.5),  # reversed: swapped (2 / 4)
    ("-2 - 4", 0.5),  # the reader takes no sign: 2 - 4 (2 / 4)
    ("From 2 to 6 seconds.", 1.0), ("0:02 - 0:06", 1.0), ("<think>maybe 0 - 1</think>2 - 6", 1.0),
    ("[2, 6]", 0.0),  # one number read (2): no span
    ("", 0.0), (None, 0.0), ("somewhere", 0.0),
    ("2 - 2", 0.0),  # a point
])
def test_charades_iou_of_the_span_as_given(response: str | None, iou: float) -> None:
    assert rules.charades_item(row({"time": [2.0, 6.0]}, response, ptype="temporal_grounding")) == pytest.approx(iou)


def test_charades_reference_as_given() -> None:
    """The task's IoU takes the reference span as given: reversed, [6, 2] against 2 - 6 overlaps by
    max(0, min(6, 2) - max(2, 6)) = 0; a point reference against the same point has no extent: 0."""
    assert rules.charades_item(row({"time": [6.0, 2.0]}, "2 - 6", ptype="temporal_grounding")) == 0.0
    assert rules.charades_item(row({"time": [3.0, 3.0]}, "3 - 3", ptype="temporal_grounding")) == 0.0


SPAN_ENDS = st.one_of(st.floats(-50, 50), st.integers(-5, 5).map(float))  # small integers: shared ends, points


@settings(max_examples=80, deadline=None)
@given(a=SPAN_ENDS, b=SPAN_ENDS, c=SPAN_ENDS, d=SPAN_ENDS)
def test_span_iou_equals_lmms_evals_charades_iou(a: float, b: float, c: float, d: float) -> None:
    from lmms_eval.tasks.charades_sta import utils as reference

    pred = [a, b] if b > a else [b, a]  # the order its extract_time gives
    assert rules.span_iou((a, b), (c, d)) == reference.iou((c, d), pred)


def test_charades_official_table() -> None:
    rows = [row({"time": [2.0, 6.0]}, r, ptype="temporal_grounding") for r in ("2 - 6", "4 - 10", "3 - 6", "")]
    official = block(BENCHMARKS.get("charades_sta"), rows, "official")
    # IoUs 1, 0.25, 0.75, 0
    assert official["metrics"] == pytest.approx({"mIoU": 50.0, "R@0.3": 50.0, "R@0.5": 50.0, "R@0.7": 50.0})


# -- HC-STVG: m_vIoU, vIoU@0.3/0.5, m_tIoU ---------------------------------------------------------------------------

BOX = [0, 0, 10, 10]
TUBE = {"time": [0.0, 3.0], "boxes": {str(s): BOX for s in range(4)}}


def test_stvg_viou_by_hand() -> None:
    partial = json.dumps({"time": [1, 4], "boxes": {"1": BOX, "2": [0, 0, 10, 6], "4": BOX}})
    exact = json.dumps(TUBE)
    got = rules.stvg_item(row(TUBE, partial, ptype="spatial_temporal_grounding"))
    # frames 1-4 vs 0-3: union 5, shared {1, 2, 3}; IoU 1 + 0.6 + 0 (no box at 3) -> vIoU 1.6 / 5, tIoU 3 / 5
    assert got["score"] == pytest.approx(0.32) and got["components"]["tiou"] == pytest.approx(0.6)
    rows = [row(TUBE, r, ptype="spatial_temporal_grounding") for r in (partial, exact, "")]
    official = block(BENCHMARKS.get("stvg"), rows, "official")
    assert official["metrics"] == pytest.approx({"m_vIoU": 100 * 1.32 / 3, "vIoU@0.3": 200 / 3, "vIoU@0.5": 100 / 3,
                                                 "m_tIoU": 100 * 1.6 / 3})
    assert official["score"] == official["metrics"]["m_vIoU"]
    half = json.dumps({"time": [0, 3], "boxes": {"0": BOX, "1": BOX}})  # 2 of 4 frames: vIoU exactly 0.5
    at_half = block(BENCHMARKS.get("stvg"), [row(TUBE, half, ptype="spatial_temporal_grounding")], "official")
    assert at_half["metrics"]["m_vIoU"] == 50.0 and at_half["metrics"]["vIoU@0.5"] == 0.0  # above, not at, 0.5


# -- LiveSports-3K OCR, VideoReasonBench tables --------------------------------------------------------------------


def test_livesports_ocr_sub_score() -> None:
    # the official item is the choice by logits (row `official`), not the generated text: the texts here say otherwise
    rows = [{**row("A", "B", 0, category="who", ocr=1), "official": {"choice": "A"}},
            {**row("A", "A", 1, category="who", ocr=1), "official": {"choice": "C"}},
            {**row("B", "D", 0, category="when", ocr=0), "official": {"choice": "B"}}]
    official = block(BENCHMARKS.get("livesports3k_qa"), rows, "official")
    assert official["metrics"] == pytest.approx({"accuracy": 200 / 3, "OCR": 50.0, "non-OCR": 100.0})
    assert official["breakdowns"]["ocr"] == {"0": {"score": 100.0, "n": 1}, "1": {"score": 50.0, "n": 2}}


def test_videoreasonbench_num_operation_and_state_tables(tmp_path: Path) -> None:
    folder = tmp_path / "videoreasonbench" / "questions"
    folder.mkdir(parents=True)
    items = {f"q{i}": {"video": f"videos/card/v{i}.mp4", "question": "What now?", "answer": "x", "dim": "order_state",
                       "num_operation": ops, "num_state": 4} for i, ops in enumerate((3, 3, 5))}
    (folder / "card.json").write_text(json.dumps(items))
    records = BENCHMARKS.get("videoreasonbench").load(tmp_path)
    assert [(r.meta["num_operation"], r.meta["num_state"]) for r in records] == [(3, 4), (3, 4), (5, 4)]
    rows = [row("x", "x", s, "open_ended", **r.meta) for r, s in zip(records, (1, 0, 1))]
    official = block(BENCHMARKS.get("videoreasonbench"), rows, "official")
    assert official["breakdowns"]["num_operation"] == {"3": {"score": 50.0, "n": 2}, "5": {"score": 100.0, "n": 1}}
    assert official["breakdowns"]["num_state"] == {"4": {"score": pytest.approx(200 / 3), "n": 3}}


# -- TempCompass: the questions files as the authors release them ---------------------------------------------------


def test_tempcompass_nested_questions_files(tmp_path: Path) -> None:
    folder = tmp_path / "tempcompass" / "questions"
    folder.mkdir(parents=True)
    mc = {"v1": {"speed": [{"question": "How fast?\nA. slow\nB. fast", "answer": "B. fast"}],
                 "direction": [{"question": "Where to?\nA. left\nB. right", "answer": "A. left"},
                               {"question": "From where?\nA. up\nB. down", "answer": "B. down"}]}}
    yes_no = {"v2": {"order": [{"question": "Is it first?", "answer": "yes"}]}}
    (folder / "multi-choice.json").write_text(json.dumps(mc))
    (folder / "yes_no.json").write_text(json.dumps(yes_no))
    records = {r.id: r for r in BENCHMARKS.get("tempcompass").load(tmp_path)}
    assert sorted(records) == ["tempcompass/multi-choice/v1/direction_0", "tempcompass/multi-choice/v1/direction_1",
                               "tempcompass/multi-choice/v1/speed_0", "tempcompass/yes_no/v2/order_0"]
    speed = records["tempcompass/multi-choice/v1/speed_0"]
    assert (speed.answer, speed.options, speed.meta["dimension"]) == ("B", ["slow", "fast"], "speed")
    assert records["tempcompass/yes_no/v2/order_0"].answer == "yes"


# -- LongVideo-Reason: the Long-RL string match, failed generations dropped ----------------------------------------


@pytest.mark.parametrize(("response", "score", "fmt"), [
    ("B", 1.0, 0.0), ("  B \n", 1.0, 0.0),  # no tag: the whole response, stripped
    ("<think>x</think> <answer>B</answer>", 1.0, 1.0), ("<think>a\nb</think>\n<answer> B </answer>", 1.0, 1.0),
    ("<answer>B</answer><answer>C</answer>", 1.0, 0.0),  # the first tag decides
    ("<answer>\nB\n</answer>", 0.0, 0.0),  # a tag over lines is not read: the whole response is compared
    ("<answer>Therefore the final answer is: B</answer>", 1.0, 0.0),
    ("Therefore the final answer is: B", 0.0, 0.0),  # the phrase without its tag: the whole response
    ("Therefore the final answer is: C <answer>B</answer>", 0.0, 0.0),  # the phrase present: only its tagged form
    ("b", 0.0, 0.0), ("B.", 0.0, 0.0), ("The answer is B", 0.0, 0.0), ("<answer>A or B</answer>", 0.0, 0.0),
    ("<answer>B. the goal</answer>", 0.0, 0.0), ("", 0.0, 0.0),
])
def test_longvideo_reason_reader(response: str, score: float, fmt: float) -> None:
    assert choice.longvideo_reason_item(row("B", response)) == {"score": score, "format": fmt}


def test_longvideo_reason_math_verify_never_decides_a_letter() -> None:
    """The official scorer's symbolic check parses the `<answer>X</answer>` reference to nothing, so it never
    scores a letter right (math_verify, the scorer's own library, run here)."""
    from math_verify import parse, verify
    gold = parse("<answer>B</answer>")
    assert gold == []
    assert not any(verify(gold, parse(text)) for text in ("B", "<answer>B</answer>", "\\boxed{B}", "2"))


def test_longvideo_reason_drops_failed_generations() -> None:
    rows = [row("B", "<think>t</think><answer>B</answer>", 1, category="goal"), row("A", "a", 0, category="goal"),
            row("C", "C", 1, category="plot"), row("D", None, 0, category="plot", error="generation failed")]
    official, strict = both("longvideo_reason", rows)
    assert official["score"] == pytest.approx(200 / 3) and official["n"] == 3 and official["dropped"] == 1
    assert official["metrics"] == pytest.approx({"accuracy": 200 / 3, "format_accuracy": 100 / 3})
    assert official["breakdowns"]["category"] == {"goal": {"score": 50.0, "n": 2}, "plot": {"score": 100.0, "n": 1}}
    assert strict["score"] == 50.0 and strict["n"] == 4 and strict["failed"] == 1


# -- ODV-Bench: the authors' lmms-eval reader; empty predictions dropped -----------------------------------------


@pytest.mark.parametrize(("response", "letter"), [
    ("B", "B"), ("b", "B"), ("B. a red car", "B"), ("b.car", "B"), ("(B)", "B"), ("'B'", "B"),
    ("The answer is D", "D"), ("I think a car", "A"),  # the article "a" is a lone letter a-e
    ("A or B", "A"), ("Option: C", "C"), ("B. red\nC. blue", "B"),  # "X. text" over lines: the first lone letter
    ("none", "none"), ("答案是B", "答案是b"),  # CJK characters are word characters: no lone letter
    ("F", "f"), ("", ""), ("x-B", "B"),  # "-" beside no space: a space
    ("x - B-C", "x  bc"),  # "-" beside a space somewhere: every "-" removed, so "B-C" becomes the word "bc"
])
def test_odvbench_letter(response: str, letter: str) -> None:
    assert choice.odvbench_letter(response) == letter


def test_odvbench_drops_empty_predictions_by_task_and_subtask() -> None:
    rows = [row("B", "B", 1, task="static", subtask="sign"), row("B", "The answer is D", 0, task="static", subtask="sign"),
            row("C", "", 0, task="dynamic", subtask="car"),  # empty: dropped
            row("A", None, 0, task="dynamic", subtask="car", error="generation failed"),  # no text: dropped
            row("A", "  ", 0, task="dynamic", subtask="car"),  # blank, not empty: counted, wrong
            row("A", "I think a truck", 0, task="dynamic", subtask="truck")]  # reads A: right
    official, strict = both("odvbench", rows)
    assert (official["score"], official["n"], official["dropped"]) == (50.0, 4, 2)
    assert official["breakdowns"]["task"] == {"dynamic": {"score": 50.0, "n": 2}, "static": {"score": 50.0, "n": 2}}
    assert official["breakdowns"]["subtask"]["car"] == {"score": 0.0, "n": 1}
    assert strict["score"] == pytest.approx(100 / 6) and strict["n"] == 6
