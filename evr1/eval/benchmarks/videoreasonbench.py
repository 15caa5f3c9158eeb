"""VideoReasonBench: vision-centric state tracking (open-ended, 1,440 questions), every answer judged.

The official scorer (llyx97/video_reason_bench `utils/eval_utils.py`, commit 07d2644) judges the text after
"Final Answer" with its own prompt ("Correct" exactly). VideoReasonBench's official scoring of Predict Operation items (`prediction_operation`, no reference answer):
llyx97/video_reason_bench `eval_api.py` `evaluate_operation` and `utils/eval_utils.py` `extract_*`, `get_next_*`,
`eval_op_*` (commit 3732534), rewritten here.

The judge extracts the moves or commands from the final answer with one prompt per game (quoted below); evr1 reads
the reply as a Python literal (`ast.literal_eval`) where the script `eval()`s it, runs the moves through that game's
simulator from the state the question starts from (kept by the importer: `operation_start`) and compares the result
with the target state parsed from the question. Where the script would raise on a reply (a non-literal, a move of the
wrong type, an unknown path or pile), evr1 scores the item incorrect; a malformed question is a data error.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.annotation_rows import plain, video
from evr1.eval.definition import JUDGE, Benchmark, RowContext
from evr1.eval.protocols import Official
from evr1.problem_types import ProblemType as PT
from evr1.rewards.judge_client import chat

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.specs import JudgeSpec

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


VIDEOREASON_SKILLS = {  # `dim` -> (skill, level), as in the VideoReasonBench paper and its utils/show_results.py
    "order_operation": ("Recall Order", 1), "counting_operation": ("Recall Count", 1),
    "order_state": ("Infer State", 2), "counting_state": ("Infer State", 2), "comparison_state": ("Compare State", 2),
    "prediction_state": ("Predict State", 3), "prediction_operation": ("Predict Operation", 3),
}


def videoreasonbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """One `questions/<demo>.json` object (question key -> row), or several merged with `<demo>_<key>` keys as
    the official loader does; `video` is "videos/<demo>/<name>.mp4" (the media folder holds `<demo>/`). A Predict
    Operation row keeps the state its question starts from (`op_state`, `op_coord`) for the official simulation."""
    out = []
    for key, item in row.items():
        if item["dim"] not in VIDEOREASON_SKILLS:
            raise ValueError(f"question {key!r}: unknown VideoReasonBench dim {item['dim']!r}; known: {sorted(VIDEOREASON_SKILLS)}")
        path = str(item["video"]).removeprefix("videos/")
        demo = PurePath(path).parent.name
        skill, level = VIDEOREASON_SKILLS[item["dim"]]
        rid = key if key.startswith(f"{demo}_") else f"{demo}_{key}"
        try:
            start = operation_start(demo, item) if item["dim"] == "prediction_operation" else {}
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ValueError(f"question {key!r}: a prediction_operation row needs its released 'states' (and the"
                             f" grid's 'coords', 'num_state'): {exc!r}") from None
        out.append(plain(rid, item["question"], "open_ended", item["answer"], [video(ctx, path)],
                         category=skill, level=level, demo=demo, num_operation=item.get("num_operation"),
                         num_state=item.get("num_state"), **start))
    return out


# -- official scorer ---------------------------------------------------------------------------------------------------


VIDEOREASON_PROMPT = (
    "You will be given a question, a model response and a ground-truth answer. Your task is to determine whether the"
    " model response is correct based on the ground-truth answer. The model response should contain all information in"
    " the ground-truth answer.\n\nQuestion: {question}\n\nModel Response: {response}\n\nGround-Truth Answer:"
    ' {ground_truth}\n\nDirectly output "Correct" or "Incorrect":\n'
)


VIDEOREASON_REQUEST = {"temperature": 0.0, "max_tokens": 16}  # `llm_judge_api`: one user message, no system
_KIMI_THINK_END = "\u25c1/think\u25b7"
_FINAL_ANSWER = re.compile(r"Final Answer\s*(.*?)\s*$", re.DOTALL)
OPERATION_SKILL = "Predict Operation"  # scored officially by simulating the extracted operations


def videoreason_final_answer(response: str) -> str:
    """The official `extract_final_answer`: the part after a "◁/think▷" (if any), then the text after the first
    "Final Answer", stripped ("" when there is none)."""
    if _KIMI_THINK_END in response:
        response = response.split(_KIMI_THINK_END)[1]
    found = _FINAL_ANSWER.search(response)
    return found.group(1) if found else ""


def videoreason_judge(record: Record, response: str, judge: JudgeSpec) -> dict[str, Any]:
    """The official judgement: no "Final Answer" (or nothing after it) is incorrect unasked (Predict Operation items
    too: `evaluate_operation` returns False there); else the judge's reply must be exactly "Correct". A Predict
    Operation item's final answer goes to its game's extraction prompt instead, and the extracted operations must reach
    the question's target state (`operation_correct`)."""
    final = videoreason_final_answer(response)
    if not final:
        return {"final_answer": "", "correct": False}
    if record.meta.get("category") == OPERATION_SKILL:
        demo = record.meta.get("demo")
        if "op_state" not in record.meta or demo not in EXTRACT_PROMPTS:
            raise ValueError(f"VideoReasonBench record {record.id!r}: a Predict Operation item needs meta 'demo' (one"
                             f" of {sorted(EXTRACT_PROMPTS)}) and 'op_state' (import the benchmark again)")
        reply = chat(judge, None, EXTRACT_PROMPTS[demo].format(response=final), options=EXTRACT_REQUEST)
        try:
            correct = operation_correct(demo, record.problem, record.meta, reply)
        except (KeyError, ValueError) as exc:  # the question's target or the kept state is malformed
            raise ValueError(f"VideoReasonBench record {record.id!r}: cannot read its target or state: {exc}") from None
        return {"final_answer": final, "extracted": reply, "correct": correct}
    prompt = VIDEOREASON_PROMPT.format(question=record.problem, response=final, ground_truth=record.answer)
    return {"final_answer": final, "correct": chat(judge, None, prompt, options=VIDEOREASON_REQUEST) == "Correct"}


def videoreason_item(row: Row) -> float:
    """The official judge step's `correct` ("Final Answer" required; the reply exactly "Correct", or for a Predict
    Operation item the extracted operations reaching the target); an unreachable judge is incorrect, as the script's
    empty reply; a row with no official verdict (judged before this step existed) keeps evr1's score."""
    verdict = row.get("official") or {}
    if "correct" in verdict or "error" in verdict:
        return float(verdict.get("correct") is True)
    return float(row["score"]) if row.get("response") is not None else 0.0


STATE_GROUPS = {1: "state_1", 3: "state_1", 2: "state_2", 4: "state_2"}  # show_results.py's state_size_map


def num_op_group(num_operation: Any) -> str | None:
    """show_results.py's operation bucket: `num_op_5_9` (5-9 operations), `num_op_10_14` (10-14); None outside them
    (the script then counts the item in the previous item's bucket, or fails on a first item)."""
    n = int(num_operation)
    return "num_op_5_9" if 5 <= n < 10 else "num_op_10_14" if 10 <= n < 15 else None


def state_group(num_state: Any) -> str | None:
    """show_results.py's merged state count: `state_1` for 1 or 3 states, `state_2` for 2 or 4; None otherwise
    (where the script fails)."""
    return STATE_GROUPS.get(int(num_state))


GROUPINGS = (("num_op", "num_operation", num_op_group), ("state", "num_state", state_group))


def videoreason_tables(rows: Sequence[Row]) -> Aggregate:
    """Accuracy over every item, by skill, level, `num_operation` and `num_state`, and the official tables of
    show_results.py: by operation bucket (`num_op`: num_op_5_9, num_op_10_14) and merged state count (`state`:
    state_1, state_2), each bucket's accuracy also a metric of its name. An item outside every bucket is in none."""
    result = agg.accuracy("category", "level", "num_operation", "num_state")(rows)
    metrics, tables = dict(result.metrics), dict(result.breakdowns)
    for table, field, group in GROUPINGS:
        labelled = []
        for row in rows:
            value = (row.get("meta") or {}).get(field)
            label = group(value) if value is not None else None
            if label is not None:
                labelled.append({**row, "meta": {table: label}})
        if labelled:
            tables[table] = agg.breakdown(labelled, table)
            metrics.update({label: score for label, (score, _) in tables[table].items()})
    return Aggregate(result.score, metrics, tables)


VIDEOREASONBENCH = Official(
    "accuracy (the text after \"Final Answer\" judged by the official prompt, \"Correct\" exactly), by skill, level,"
    " num_operation and num_state, and the official tables by operation bucket (5-9, 10-14) and merged state count",
    videoreason_tables, videoreason_item,
    source="llyx97/video_reason_bench utils/eval_utils.py (commit 07d2644: get_judge_prompt, llm_judge_api,"
           " extract_final_answer), utils/show_results.py (HEAD 2524387, last changed 07d2644: state_size_map l. 5,"
           " the num_op and state buckets l. 30-42, dims l. 44)",
    judge=videoreason_judge,
)


Board = list[list[int]]
_HRD_PROMPT = (
    "You will be given a model-generated response describing a sequence of movements. Your task is to extract the"
    " movements in the order they appear and return them as a list (e.g., ['left', 'up', 'down', 'right']).\n\n"
    "Model Response: {response}\n\nExtracted Movements:\n"
)


# `extract_move_hrd` (hrd and grid), `extract_move_cup`, `extract_file_cmd`, `extract_move_card`, `extract_move_chip`
EXTRACT_PROMPTS = {
    "hrd": _HRD_PROMPT,
    "grid": _HRD_PROMPT,
    "cup": (
        "You will be given a model-generated response describing a sequence of cup swaps. Each swap is represented as"
        " a pair of coordinates\u2014for example, (a1, b2)\u2014indicating the two positions being swapped. \n\n"
        "Your task:\nExtract all coordinate pairs from the response in the exact order they appear, and return them as"
        " a list of tuples.\n\nFormat your answer like this:\n[('a1', 'b2'), ('c1', 'b1'), ('a3', 'b2')]\n\n"
        "Model Response:\n{response}\n\nExtracted Swaps:\n"
    ),
    "file_sys": (
        "You will be given a model-generated response regarding a file operation command in Linux system.\n\n"
        "Your task:\nIdentify and extract only the actual command from the model response, removing any irrelevant or"
        " descriptive text.\n\nModel Response:\n{response}\n\nExtracted Command:\n"
    ),
    "card": (
        "You will be given a model-generated response describing a sequence of operations performed to cards. Each"
        " operation either adds or removes a card from pile0 or pile1.\n\nYour task:\n- Extract all valid operations"
        " and return them as a list of strings.\n\n- Each operation must involve either adding or removing a card to"
        " or from pile0 or pile1.\n\n- If no valid operations are found, return an empty list ([]).\n\n"
        "Format your answer like this:\n['add 6 of Hearts to pile0', 'remove King of Clubs from pile0']\n\n"
        "Model Response:\n{response}\n\nExtracted Operations:\n"
    ),
    "chip": (
        "You will be given a model-generated response describing a sequence of operations involving chips and cups."
        " Each operation either adds or removes a chip from cup0 or cup1.\n\nYour task:\n- Extract all valid"
        " operations and return them as a list of strings.\n\n- Each operation must involve either adding or removing"
        " a chip to or from cup0 or cup1.\n\n- If no valid operations are found, return an empty list ([]).\n\n\n"
        "Format your answer like this:\n['add 20 to cup0', 'remove 50 cup0']\n\n"
        "Model Response:\n{response}\n\nExtracted Operations:\n"
    ),
}


EXTRACT_REQUEST = {"temperature": 0.0, "max_tokens": 512}  # `test_chat_completion_openai`: one user message
_STATE_KEYS = {"file_sys": "path", "card": "pile", "chip": "cup"}
_CARDS = {f"{rank} of {suit}" for rank in ["Ace", *map(str, range(2, 11)), "Jack", "Queen", "King"]
          for suit in ("Hearts", "Clubs", "Diamonds", "Spades")}


_CHIPS = {5, 10, 20, 50, 100}
_LETTERS = {c: i for i, c in enumerate("abcde")}
_DIGITS_1 = {str(i + 1): i for i in range(5)}  # "1" -> 0 (hrd columns, cup)
_DIGITS_0 = {str(i): i for i in range(5)}  # "0" -> 0 (grid)
_CUP_KEYS = _LETTERS | _DIGITS_1  # a cup cell's either character


def operation_start(demo: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """The state a Predict Operation question starts from, as `evaluate_operation` picks it: the released states' first
    (`visible_time` "end") or last entry; `op_state` (and the grid's `op_coord`, the red circle's [x, y])."""
    at = 0 if item.get("visible_time") == "end" else -1
    states = item["states"]
    if demo in ("hrd", "cup"):
        return {"op_state": states[at]}
    if demo == "grid":
        return {"op_state": states[at], "op_coord": item["coords"][at]}
    if demo in _STATE_KEYS:
        keys = [f"{_STATE_KEYS[demo]}{i}" for i in range(int(item["num_state"]))]
        if demo == "file_sys":  # {path: {command: files}}: the files after the chosen command
            return {"op_state": {k: list(states[k].values())[at] for k in keys}}
        return {"op_state": {k: states[k][at] for k in keys}}
    raise ValueError(f"unknown VideoReasonBench demo {demo!r}; known: grid, hrd, cup, file_sys, card, chip")


def _found(pattern: str, question: str, what: str) -> re.Match[str]:
    found = re.search(pattern, question)
    if found is None:
        raise ValueError(f"VideoReasonBench question has no {what} (pattern {pattern!r}): {question[:80]!r}...")
    return found


def _target_cells(question: str, size: str, listing: str, what: str) -> tuple[Board, list[str]]:
    """An all-0 board of the size `size` finds ("... (rows)x(cols) ..."), and the cells `listing` finds (", "-separated):
    the start of every `extract_tgt_board_*`."""
    found = _found(size, question, "board size")
    rows, cols = int(found.group(1)), int(found.group(2))
    return [[0] * cols for _ in range(rows)], _found(listing, question, what).group(1).split(", ")


def _labelled(cell: str) -> tuple[str, str, str]:
    """A cell "(a,1): value" as its row letter, column digit and value."""
    coord, value = cell.split(": ")
    letter, digit = coord.strip("()").split(",")
    return letter, digit, value


def _literal(reply: str) -> Any:
    """The judge's reply as a Python literal (the script `eval()`s it); None when it is not one."""
    try:
        return ast.literal_eval(reply)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _moves(reply: str) -> list[str] | None:
    """`extract_move_hrd`: the reply's items lowercased; None (incorrect) when it is no literal sequence of strings."""
    value = _literal(reply)
    if not isinstance(value, (list, tuple, str)) or not all(isinstance(m, str) for m in value):
        return None
    return [m.lower() for m in value]


def hrd_target(question: str) -> Board:
    """`extract_tgt_board_hrd`: row letter "a" is the bottom row (index rows-1), column digits count from 1."""
    board, cells = _target_cells(question, r"on a (\d+)x(\d+) board", r"the desired number arrangement:\s*`([^`]+)`",
                                 "target arrangement")
    for cell in cells:
        letter, digit, number = _labelled(cell)
        board[len(board) - 1 - _LETTERS[letter]][_DIGITS_1[digit]] = int(number)
    return board


def hrd_play(board: Board, moves: Sequence[str]) -> Board:
    """`get_next_board_hrd`: each move swaps the blank (0) with a neighbour: "up" the one above it, "down" below,
    "left" to its right, "right" to its left; an unknown move or one off the (square) board is skipped."""
    board = [list(row) for row in board]
    size = len(board)
    steps = {"up": (-1, 0), "down": (1, 0), "left": (0, 1), "right": (0, -1)}
    for move in moves:
        blank = next(((i, j) for i in range(size) for j in range(size) if board[i][j] == 0), None)
        if move not in steps or blank is None:
            continue
        (bi, bj), (di, dj) = blank, steps[move]
        ti, tj = bi + di, bj + dj
        if 0 <= ti < size and 0 <= tj < size:
            board[bi][bj], board[ti][tj] = board[ti][tj], board[bi][bj]
    return board


def grid_target(question: str) -> Board:
    """`extract_tgt_board_grid`: "(a,0): black" is row a (index 0), column 0; black 1, anything else 0."""
    board, cells = _target_cells(question, r"presents a (\d+)x(\d+) grid",
                                 r"the desired arrangement of black and white pieces:\s*`([^`]+)`", "target")
    for cell in cells:
        letter, digit, color = _labelled(cell)
        board[_LETTERS[letter]][_DIGITS_0[digit]] = int(color == "black")
    return board


def grid_play(board: Board, coord: Sequence[int], moves: Sequence[str]) -> Board | None:
    """`eval_op_grid`: None (incorrect) when a move is not left/right/up/down; else the circle at [x, y] steps
    (left x-1, right x+1, up y-1, down y+1; a step off the square board is skipped) and flips board[y][x] and its
    orthogonal neighbours."""
    steps = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}
    if not all(m in steps for m in moves):
        return None
    board, (x, y), size = [list(row) for row in board], coord, len(board)
    for move in moves:
        nx, ny = x + steps[move][0], y + steps[move][1]
        if not (0 <= nx < size and 0 <= ny < size):
            continue
        x, y = nx, ny
        for cx, cy in ((x, y), (x, y - 1), (x, y + 1), (x - 1, y), (x + 1, y)):
            if 0 <= cx < size and 0 <= cy < size:
                board[cy][cx] = 1 - board[cy][cx]
    return board


def cup_target(question: str) -> Board:
    """`extract_tgt_board_cup`: the listed cells ("b1": row b, column 1, from 1) hold a coin (1), the others 0."""
    board, cells = _target_cells(question, r"puzzle on a (\d+)x(\d+) board",
                                 r"achieve the desired distribution of coins:\s*`([^`]+)`", "target coins")
    for cell in cells:
        board[_LETTERS[cell[0]]][_DIGITS_1[cell[1]]] = 1
    return board


def _cell(part: Any) -> tuple[int, int] | None:
    if not isinstance(part, (str, list, tuple)) or len(part) < 2:
        return None
    row, col = part[0], part[1]
    ok = isinstance(row, str) and isinstance(col, str) and row in _CUP_KEYS and col in _CUP_KEYS
    return (_CUP_KEYS[row], _CUP_KEYS[col]) if ok else None


def cup_play(board: Board, swaps: Sequence[Any]) -> Board:
    """`get_next_board_cup`: each swap's first two parts name cells by their first two characters (letters a-e or
    digits 1-5, either place); a swap that names no cell of the board is skipped (the script's caught error)."""
    board = [list(row) for row in board]
    for swap in swaps:
        if not isinstance(swap, (str, list, tuple)) or len(swap) < 2:
            continue
        first, second = _cell(swap[0]), _cell(swap[1])
        if first is None or second is None or not all(r < len(board) and c < len(board[0]) for r, c in (first, second)):
            continue
        (r1, c1), (r2, c2) = first, second
        board[r1][c1], board[r2][c2] = board[r2][c2], board[r1][c1]
    return board


def _target_holder(question: str) -> str:
    return _found(r"to ensure that\s*`([^`]+)` contains exactly", question, "target path, pile or cup").group(1)


def file_commands(reply: str) -> list[str]:
    """`extract_file_cmd`: the reply without enclosing backticks and "bash\\n", split at " & "."""
    return reply.strip("`").replace("bash\n", "").split(" & ")


def file_play(start: Mapping[str, Sequence[str]], commands: Sequence[str], question: str) -> bool:
    """`eval_op_file`: at most two commands, each `rm -rf` or `touch` with a `{a,b}` file list, the last rm's and the
    last touch's files disjoint; applied to the first `pathN` each names, the target path must hold exactly the files
    the question lists."""
    if len(commands) > 2:
        return False
    named = {"rm": set(), "touch": set()}
    for command in commands:
        files = re.search(r"\{([^}]+)\}", command)
        if not command.startswith(("rm -rf", "touch")) or files is None:
            return False
        named["rm" if command.startswith("rm -rf") else "touch"] = set(files.group(1).split(","))
    if named["rm"] & named["touch"]:
        return False
    states = {path: set(files) for path, files in start.items()}
    for command in commands:
        files = set(re.search(r"\{([^}]+)\}", command).group(1).split(","))  # type: ignore[union-attr]
        paths = re.findall(r"path\d+", command)
        if not paths or paths[0] not in states:
            return False  # the script raises here
        states[paths[0]] = states[paths[0]] - files if command.startswith("rm") else states[paths[0]] | files
    wanted = set(_found(r"contains exactly the following files:\s*`([^`]+)`", question, "target files")
                 .group(1).split(", "))
    return states.get(_target_holder(question)) == wanted


def _counted_moves(reply: str) -> list[str] | None:
    value = _literal(reply)
    return list(value) if isinstance(value, (list, tuple)) and all(isinstance(m, str) for m in value) else None


def card_play(start: Mapping[str, Sequence[str]], actions: Sequence[str], question: str) -> bool:
    """`eval_op_card`: every action "add|remove <card> <word> pile0|pile1" with a real card and an existing pile; an
    "add" (the first word exactly; "adding" does nothing) appends the card, a "remove" must name the list's first
    card; the target pile's list must equal the question's list (compared as listed, as the script does)."""
    piles = {k: list(v) for k, v in start.items()}
    for action in actions:
        words = action.split()
        if not action.startswith(("add", "remove")) or not action.endswith(("pile0", "pile1")):
            return False
        card, pile = " ".join(words[1:-2]), words[-1]
        if card not in _CARDS or pile not in piles:
            return False
        if words[0] == "add":
            piles[pile].append(card)
        elif words[0] == "remove":
            if not piles[pile] or piles[pile][0] != card:
                return False
            piles[pile].remove(card)
    wanted = _found(r"contains exactly the following cards from top to bottom:\s*`([^`]+)`", question,
                    "target cards").group(1).split(", ")
    return piles.get(_target_holder(question)) == wanted


def chip_play(start: Mapping[str, Sequence[int]], actions: Sequence[str], question: str) -> bool:
    """`eval_op_chip`: every action "add|remove <chip> ... cup0|cup1" with a chip of 5, 10, 20, 50 or 100 (the second
    word, digits) and an existing cup; "add" appends, "remove" (the first word exactly, else nothing happens) needs
    the chip in the cup; the target cup must hold the question's chips, order aside."""
    cups = {k: list(v) for k, v in start.items()}
    for action in actions:
        words = action.split()
        if not action.startswith(("add", "remove")) or not action.endswith(("cup0", "cup1")):
            return False
        if len(words) < 2 or not words[1].isdecimal() or int(words[1]) not in _CHIPS or words[-1] not in cups:
            return False
        chip, cup = int(words[1]), cups[words[-1]]
        if words[0] == "add":
            cup.append(chip)
        elif words[0] == "remove":
            if chip not in cup:
                return False
            cup.remove(chip)
    wanted = [int(c) for c in _found(r"contains exactly the following chips:\s*`([^`]+)`", question,
                                     "target chips").group(1).split(", ")]
    holder = _target_holder(question)
    return holder in cups and Counter(cups[holder]) == Counter(wanted)


def operation_correct(demo: str, question: str, meta: Mapping[str, Any], reply: str) -> bool:
    """Whether the judge's extraction `reply` reaches the question's target from `meta["op_state"]` (the official
    `eval_op_<demo>`); an empty extraction is incorrect."""
    start = meta["op_state"]
    if demo == "file_sys":
        return file_play(start, file_commands(reply), question)
    if demo in ("card", "chip"):
        actions = _counted_moves(reply)
        if not actions:
            return False
        return card_play(start, actions, question) if demo == "card" else chip_play(start, actions, question)
    if demo == "cup":
        swaps = _literal(reply)
        if not swaps or not isinstance(swaps, (list, tuple, str)):
            return False
        return cup_play(start, swaps) == cup_target(question)
    moves = _moves(reply)
    if not moves:
        return False
    if demo == "hrd":
        return hrd_play(start, moves) == hrd_target(question)
    if demo == "grid":
        return grid_play(start, meta["op_coord"], moves) == grid_target(question)
    raise ValueError(f"unknown VideoReasonBench demo {demo!r}; known: {sorted(EXTRACT_PROMPTS)}")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"videoreasonbench.json": {  # questions/<demo>.json of github.com/llyx97/video_reason_bench
    "state1_op5_order_operation_start": {
        "video": "videos/cup/state1_op5_start.mp4", "question": "What are the 1st to 3rd moves?",
        "answer": "1st: (a1, b2)\n2nd: (c2, b1)\n3rd: (a3, c1)", "dim": "order_operation", "num_state": 1,
        "num_operation": 5, "visible_time": "start"},
    "state1_op5_comparison_state_start": {
        "video": "videos/cup/state1_op5_start.mp4", "question": "How many coins differ from the start?",
        "answer": "2", "dim": "comparison_state", "num_state": 1, "num_operation": 5, "visible_time": "start"},
}}


BENCHMARK = Benchmark(
    name="videoreasonbench",
    title="VideoReasonBench",
    folder="videoreasonbench",
    annotations=("questions", "videoreasonbench.json"),
    media_dir="videos",
    question_types=(PT.OPEN_ENDED,),
    metric="accuracy (judged correct or incorrect), by skill",
    aggregate=agg.accuracy("category", "level"),
    importer=videoreasonbench,
    routes=JUDGE,
    official=VIDEOREASONBENCH,
    fixtures=FIXTURES,
)
