"""VideoReasonBench.

VideoReasonBench's official Predict Operation scoring (`evr1.eval.benchmarks.videoreasonbench`): each game's simulator
and target parser on hand-worked states, the judge's extraction read as a literal (never evaluated), the starting
state the importer keeps, and the judge step against the local stub endpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_server import Judge

from evr1.data.records import Record
from evr1.eval.api import evaluate
from evr1.eval.benchmarks.videoreasonbench import (
    EXTRACT_PROMPTS,
    VIDEOREASON_PROMPT,
    cup_play,
    cup_target,
    grid_play,
    grid_target,
    hrd_play,
    hrd_target,
    num_op_group,
    operation_correct,
    operation_start,
    state_group,
    videoreason_final_answer,
    videoreason_item,
    videoreason_judge,
)
from evr1.eval.protocols import block
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

from ..rows import sample_row
from ..verdict_judge import running_verdict_judge, verdict_requests

HRD_Q = ("... a sliding puzzle on a 3x3 board ... achieve the desired number arrangement: `(a,1): 6, (a,2): 7,"
         " (a,3): 8, (b,1): 4, (b,2): 2, (b,3): 5, (c,1): 1, (c,2): 3, (c,3): 0`? Assume ...")


HRD_START = [[1, 2, 3], [4, 0, 5], [6, 7, 8]]


GRID_Q = ("The video presents a 3x3 grid. ... the desired arrangement of black and white pieces: `(a,0): black,"
          " (a,1): white, (a,2): black, (b,0): black, (b,1): white, (b,2): black, (c,0): white, (c,1): black,"
          " (c,2): white`? List them in order.")


ZEROS = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]


ADDING = "['adding Ace of Hearts to pile0', 'remove 7 of Spades from pile0', 'add Ace of Hearts to pile0']"


CUP_Q = "... a 'Tricky Cup' puzzle on a 3x3 board ... achieve the desired distribution of coins: `a3, b3`? Format ..."


FILE_Q = ("If the paths currently contain ..., to ensure that `path0` contains exactly the following files:"
          " `b.py, d.json`, what sequence of commands should be executed?")


CARD_Q = ("If the piles ..., to ensure that `pile0` contains exactly the following cards from top to bottom:"
          " `8 of Clubs, Ace of Hearts`, what sequence of actions should be performed?")


CHIP_Q = ("If the cups ..., to ensure that `cup0` contains exactly the following chips: `10, 50, 50` (order does not"
          " matter), what sequence of actions should be performed?")


def test_hrd_target_and_moves() -> None:
    """Row "a" is the bottom row; "up" swaps the blank with the square above it, "left" with the one to its right; a
    move off the board or an unknown one is skipped."""
    assert hrd_target(HRD_Q) == [[1, 3, 0], [4, 2, 5], [6, 7, 8]]
    assert hrd_play(HRD_START, ["up", "left", "up", "jump"]) == [[1, 3, 0], [4, 2, 5], [6, 7, 8]]
    assert hrd_play(HRD_START, ["down", "right"]) == [[1, 2, 3], [4, 7, 5], [0, 6, 8]]


def test_grid_target_and_moves() -> None:
    """The circle at [x, y] flips board[y][x] and its orthogonal neighbours on each step; a step off the board is
    skipped (the circle stays), and a move that is not a direction makes the answer incorrect."""
    assert grid_target(GRID_Q) == [[1, 0, 1], [1, 0, 1], [0, 1, 0]]
    assert grid_play(ZEROS, [0, 0], ["right", "up", "down"]) == [[1, 0, 1], [1, 0, 1], [0, 1, 0]]
    assert grid_play(ZEROS, [0, 0], ["down"]) == [[1, 0, 0], [1, 1, 0], [1, 0, 0]]  # y is the row
    assert grid_play(ZEROS, [0, 0], ["right", "jump"]) is None


def test_cup_target_and_swaps() -> None:
    """A swap names two cells by their first two characters (letter or digit in either place); a swap naming no cell
    of the board (out of range, unknown, too short) is skipped."""
    assert cup_target(CUP_Q) == [[0, 0, 1], [0, 0, 1], [0, 0, 0]]
    swaps = [("a1", "b2"), ("c3", "a3"), ("a1", "d1"), ("x1", "a2"), "a1", ("a1",), ("2b", "b3"), [1, 2]]
    assert cup_play([[1, 0, 0], [0, 0, 0], [0, 0, 1]], swaps) == [[0, 0, 1], [0, 0, 1], [0, 0, 0]]


@pytest.mark.parametrize(("demo", "question", "reply", "correct"), [
    ("hrd", HRD_Q, "['Up', 'LEFT']", True),  # lowercased
    ("hrd", HRD_Q, "('up', 'left', 'up')", True),  # the third move is off the board
    ("hrd", HRD_Q, "['up']", False),
    ("hrd", HRD_Q, "up, left", False),  # not a literal: the script's eval raises; never evaluated here
    ("hrd", HRD_Q, "__import__('os').getcwd()", False),  # code is never run
    ("hrd", HRD_Q, "[]", False), ("hrd", HRD_Q, "", False), ("hrd", HRD_Q, "[1, 2]", False),
    ("grid", GRID_Q, "['right', 'up', 'down']", True),
    ("grid", GRID_Q, "['right', 'north', 'down']", False),
    ("cup", CUP_Q, "[('a1', 'b2'), ('c3', 'a3'), ('2b', 'b3')]", True),
    ("cup", CUP_Q, "```python\n[('a1', 'b2')]\n```", False),  # a fenced reply is no literal
    ("cup", CUP_Q, "[]", False),
    ("file_sys", FILE_Q, "touch path0/{d.json} & rm -rf path0/{a.txt}", True),
    ("file_sys", FILE_Q, "rm -rf path0/{a.txt} & touch path0/{d.json}", True),
    ("file_sys", FILE_Q, "```bash\ntouch path0/{d.json} & rm -rf path0/{a.txt}```", True),  # fences, "bash\n" go
    ("file_sys", FILE_Q, "touch path0/{d.json} & rm -rf path0/{a.txt} & ls path0", False),  # three commands
    ("file_sys", FILE_Q, "touch path0/{d.json} && rm -rf path0/{a.txt}", False),  # one command: "&&" is no separator
    ("file_sys", FILE_Q, "rm -r path0/{a.txt} & touch path0/{d.json}", False),  # only `rm -rf`
    ("file_sys", FILE_Q, "touch path0/{d.json,a.txt} & rm -rf path0/{a.txt}", False),  # overlapping files
    ("file_sys", FILE_Q, "touch path0/d.json & rm -rf path0/{a.txt}", False),  # no {..} list
    ("file_sys", FILE_Q, "touch path0/{d.json, b.py} & rm -rf path0/{a.txt}", False),  # " b.py" is another file
    ("file_sys", FILE_Q, " touch path0/{d.json} & rm -rf path0/{a.txt}", False),  # leading space kept
    ("file_sys", FILE_Q, "touch path2/{d.json} & rm -rf path0/{a.txt}", False),  # no such path
    ("file_sys", FILE_Q, "rm -rf path1/{c.csv} & touch path0/{d.json}", False),  # path0 keeps a.txt
    ("card", CARD_Q, "['remove 7 of Spades from pile0', 'add Ace of Hearts to pile0']", True),
    ("card", CARD_Q, ADDING, True),  # "adding" does nothing
    ("card", CARD_Q, "['add Ace of Hearts to pile0', 'remove 7 of Spades from pile0']", True),
    ("card", CARD_Q, "['remove 8 of Clubs from pile0']", False),  # only the list's first card can go
    ("card", CARD_Q, "['add 11 of Hearts to pile0']", False),  # no such card
    ("card", CARD_Q, "['remove 7 of Spades from pile0', 'add Ace of Hearts to pile1']", False),  # no pile1 here
    ("card", CARD_Q, "['add Ace of Hearts to pile2']", False),
    ("card", CARD_Q, "remove 7 of Spades from pile0, add Ace of Hearts to pile0", False),  # no literal
    ("card", CARD_Q, "[]", False), ("card", CARD_Q, "[1]", False),
    ("chip", CHIP_Q, "['remove 20 from cup0', 'add 50 to cup0', 'add 50 cup0']", True),
    ("chip", CHIP_Q, "['add 50 to cup0', 'add 50 to cup0', 'remove 20 from cup0', 'add 5 to cup1']", True),
    ("chip", CHIP_Q, "['remove 5 from cup0']", False),  # not in cup0
    ("chip", CHIP_Q, "['remove 20 from cup0', 'add 25 to cup0', 'add 50 to cup0']", False),  # no 25 chip
    ("chip", CHIP_Q, "['add fifty to cup0']", False), ("chip", CHIP_Q, "['add 50 to cup2']", False),
    ("chip", CHIP_Q, "['remove 20 from cup0', 'add 50 to cup0']", False),  # one 50 short
])
def test_operation_correct(demo: str, question: str, reply: str, correct: bool) -> None:
    meta = {"op_state": {"hrd": HRD_START, "grid": ZEROS, "cup": [[1, 0, 0], [0, 0, 0], [0, 0, 1]],
                         "file_sys": {"path0": ["a.txt", "b.py"], "path1": ["c.csv"]},
                         "card": {"pile0": ["7 of Spades", "8 of Clubs"]},
                         "chip": {"cup0": [20, 10], "cup1": [5]}}[demo], "op_coord": [0, 0]}
    assert operation_correct(demo, question, meta, reply) is correct


@pytest.mark.parametrize(("visible", "at"), [("end", 0), ("start", -1)])
def test_operation_start(visible: str, at: int) -> None:
    """The question starts from the released states' first entry when the video shows the end, else the last."""
    boards = [[[1, 0], [0, 2]], [[0, 1], [0, 2]]]
    assert operation_start("hrd", {"visible_time": visible, "states": boards}) == {"op_state": boards[at]}
    grid = operation_start("grid", {"visible_time": visible, "states": boards, "coords": [[0, 0], [1, 0]]})
    assert grid == {"op_state": boards[at], "op_coord": [[0, 0], [1, 0]][at]}
    files = {"path0": {"init": ["a"], "touch path0/{b}": ["a", "b"]}, "path1": {"init": ["c"], "rm -rf x": []}}
    assert operation_start("file_sys", {"visible_time": visible, "num_state": 1, "states": files}) == {
        "op_state": {"path0": [["a"], ["a", "b"]][at]}}  # num_state paths only
    piles = {"pile0": [["x"], ["x", "y"]], "pile1": [["z"], []]}
    assert operation_start("card", {"visible_time": visible, "num_state": 2, "states": piles}) == {
        "op_state": {"pile0": [["x"], ["x", "y"]][at], "pile1": [["z"], []][at]}}


def test_importer_keeps_the_starting_state(tmp_path: Path) -> None:
    folder = tmp_path / "videoreasonbench" / "questions"
    folder.mkdir(parents=True)
    chip = {"q": {"video": "videos/chip/v.mp4", "question": CHIP_Q, "answer": None, "dim": "prediction_operation",
                  "num_operation": 1, "num_state": 1, "visible_time": "start",
                  "states": {"cup0": [[20], [20, 10]]}}}
    (folder / "chip.json").write_text(json.dumps(chip))
    (record,) = BENCHMARKS.get("videoreasonbench").load(tmp_path)
    assert (record.id, record.meta["op_state"], record.meta["category"]) == (
        "videoreasonbench/chip_q", {"cup0": [20, 10]}, "Predict Operation")
    del chip["q"]["states"]
    (folder / "chip.json").write_text(json.dumps(chip))
    with pytest.raises(ValueError, match="'q'.*'states'"):
        BENCHMARKS.get("videoreasonbench").load(tmp_path)


def test_operation_judge_step(judge: Judge) -> None:
    """The final answer goes to the game's extraction prompt (one user message, temperature 0, max_tokens 512); the
    reply is simulated; without a final answer the judge is not asked; an old record without a state is an error."""
    record = Record(id="card_q", problem=CARD_Q, problem_type="open_ended", answer=None,
                    meta={"category": "Predict Operation", "demo": "card",
                          "op_state": {"pile0": ["7 of Spades", "8 of Clubs"]}})
    spec = JudgeSpec(base_url=judge.url, model="j")
    judge.reply = "['remove 7 of Spades from pile0', 'add Ace of Hearts to pile0']"
    verdict = videoreason_judge(record, "I think... Final Answer: remove 7 of Spades from pile0, add Ace of Hearts",
                                spec)
    assert verdict == {"final_answer": ": remove 7 of Spades from pile0, add Ace of Hearts",
                       "extracted": judge.reply, "correct": True}
    (body,) = judge.requests
    assert body["messages"] == [{"role": "user", "content": EXTRACT_PROMPTS["card"].format(
        response=": remove 7 of Spades from pile0, add Ace of Hearts")}]
    assert (body["temperature"], body["max_tokens"]) == (0.0, 512)
    judge.reply = "['remove 8 of Clubs from pile0']"
    assert videoreason_judge(record, "Final Answer: remove 8 of Clubs", spec)["correct"] is False
    assert videoreason_judge(record, "remove 7 of Spades", spec) == {"final_answer": "", "correct": False}
    assert len(judge.requests) == 2
    rows = [{"response": "x", "score": 1.0, "official": {"correct": False}},
            {"response": "x", "score": 0.0, "official": {"correct": True}}]
    assert [videoreason_item(r) for r in rows] == [0.0, 1.0]
    judge.reply = "['remove 7 of Spades from pile0']"  # valid moves: the target is read next
    broken = record.model_copy(update={"problem": "Which actions?"})  # no target in the question
    with pytest.raises(ValueError, match="card_q.*target"):
        videoreason_judge(broken, "Final Answer: x", spec)
    with pytest.raises(ValueError, match="card_old.*op_state"):
        videoreason_judge(Record(id="card_old", problem=CARD_Q, problem_type="open_ended", answer=None,
                                 meta={"category": "Predict Operation", "demo": "card"}), "Final Answer: x", spec)


def test_videoreasonbench_num_operation_and_state_tables(tmp_path: Path) -> None:
    folder = tmp_path / "videoreasonbench" / "questions"
    folder.mkdir(parents=True)
    items = {f"q{i}": {"video": f"videos/card/v{i}.mp4", "question": "What now?", "answer": "x", "dim": "order_state",
                       "num_operation": ops, "num_state": 4} for i, ops in enumerate((3, 3, 5))}
    (folder / "card.json").write_text(json.dumps(items))
    records = BENCHMARKS.get("videoreasonbench").load(tmp_path)
    assert [(r.meta["num_operation"], r.meta["num_state"]) for r in records] == [(3, 4), (3, 4), (5, 4)]
    rows = [sample_row("x", "x", s, "open_ended", **r.meta) for r, s in zip(records, (1, 0, 1))]
    official = block(BENCHMARKS.get("videoreasonbench"), rows, "official")
    assert official["breakdowns"]["num_operation"] == {"3": {"score": 50.0, "n": 2}, "5": {"score": 100.0, "n": 1}}
    assert official["breakdowns"]["num_state"] == {"4": {"score": pytest.approx(200 / 3), "n": 3}}
    # show_results.py's buckets: 3 operations are in none (5-9 and 10-14 only); 4 states merge into state_2
    assert official["breakdowns"]["num_op"] == {"num_op_5_9": {"score": 100.0, "n": 1}}
    assert official["breakdowns"]["state"] == {"state_2": {"score": pytest.approx(200 / 3), "n": 3}}


@pytest.mark.parametrize(("value", "bucket"), [(4, None), (5, "num_op_5_9"), (9, "num_op_5_9"), ("10", "num_op_10_14"),
                                               (14, "num_op_10_14"), (15, None)])
def test_num_op_buckets(value: object, bucket: str | None) -> None:
    assert num_op_group(value) == bucket


def test_official_tables_by_operations_and_merged_state_count() -> None:
    """show_results.py (HEAD 2524387): num_op_5_9 / num_op_10_14 and state_1 (1 or 3 states) / state_2 (2 or 4), by
    hand: 5 ops 1 state right, 9 ops 3 states wrong, 12 ops 2 states right, 14 ops 4 states right."""
    cases = [(5, 1, 1.0), (9, 3, 0.0), (12, 2, 1.0), (14, 4, 1.0)]
    rows = [sample_row("x", "x", s, "open_ended", category="Infer State", num_operation=ops, num_state=states)
            for ops, states, s in cases]
    official = block(BENCHMARKS.get("videoreasonbench"), rows, "official")
    assert official["breakdowns"]["num_op"] == {"num_op_5_9": {"score": 50.0, "n": 2}, "num_op_10_14": {"score": 100.0, "n": 2}}
    assert official["breakdowns"]["state"] == {"state_1": {"score": 50.0, "n": 2}, "state_2": {"score": 100.0, "n": 2}}
    assert {k: official["metrics"][k] for k in ("num_op_5_9", "num_op_10_14", "state_1", "state_2")} == {
        "num_op_5_9": 50.0, "num_op_10_14": 100.0, "state_1": 50.0, "state_2": 100.0}
    assert [state_group(n) for n in (1, 2, 3, 4, 5)] == ["state_1", "state_2", "state_1", "state_2", None]


@pytest.mark.parametrize(("response", "final"), [
    ("so... Final Answer: 2", ": 2"), ("Final Answer\n 2 \n", "2"), ("Final Answer: 1\nFinal Answer: 3", ": 1\nFinal Answer: 3"),
    ("The answer is 2", ""), ("final answer: 2", ""),  # "Final Answer" is required, capitalised
    ("Final Answer: 9 ◁/think▷ Final Answer: 2", ": 2"),  # the part after Kimi's think end
    ("Final Answer", ""), ("", ""),
])
def test_videoreason_final_answer(response: str, final: str) -> None:
    assert videoreason_final_answer(response) == final


def test_videoreasonbench_official_block(bench_root: Path, tmp_path: Path) -> None:
    order, compare = "videoreasonbench/cup_state1_op5_order_operation_start", "videoreasonbench/cup_state1_op5_comparison_state_start"
    answers = {order: "Swaps.\nFinal Answer: (a1, b2), (c2, b1), (a3, c1)", compare: "Final Answer: 2"}
    replies = {": (a1, b2), (c2, b1), (a3, c1)": "Correct", ": 2": "Correct."}  # not exactly "Correct": incorrect
    with running_verdict_judge(replies) as judge:
        spec = EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge"))
        got = evaluate(spec, ScriptedResponder(answers), tmp_path, benchmarks=["videoreasonbench"],
                       data_root=bench_root)["benchmarks"]["videoreasonbench"]
    assert got["protocols"]["official"]["score"] == 50.0 and got["protocols"]["official"]["n"] == 2
    official = [b for b in judge.requests if b not in verdict_requests(judge)]
    assert len(official) == 2 and all(len(b["messages"]) == 1 for b in official)  # one user message, no system
    body = next(b for b in official if ": 2" in b["messages"][0]["content"])
    assert body["messages"][0]["content"] == VIDEOREASON_PROMPT.format(
        question="How many coins differ from the start?", response=": 2", ground_truth="2")
    assert (body["temperature"], body["max_tokens"]) == (0.0, 16)


def test_videoreason_predict_operation_needs_a_final_answer(judge: Judge) -> None:
    """Predict Operation: no "Final Answer" is incorrect, as `evaluate_operation` returns False, the judge unasked (the
    simulation of a final answer: this file); a row with no official verdict keeps
    evr1's judged score."""
    record = Record(id="p", problem="Which moves restore the board?", problem_type="open_ended", answer="left, up",
                    meta={"category": "Predict Operation"})
    spec = JudgeSpec(base_url=judge.url, model="j")
    assert videoreason_judge(record, "left then up", spec) == {"final_answer": "", "correct": False}
    assert judge.requests == []
    rows = [{"response": "left then up", "score": 1.0, "official": {"final_answer": "", "correct": False}},
            {"response": "Final Answer: left, up", "score": 1.0, "official": {}}]
    assert [videoreason_item(r) for r in rows] == [0.0, 1.0]

