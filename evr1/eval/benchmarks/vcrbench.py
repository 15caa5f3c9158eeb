"""VCR-Bench (video chain-of-thought): 510 multiple-choice and 524 open-ended questions, every answer judged.

VCR-Bench's official accuracy and CoT score (zhishuifeiqian/VCR-Bench `eval_code/eval.py`, `cau_acc.py`,
`cau_total.py`, commit 4e564b7).

For the accuracy the official scorer asks its judge twice at most per item, multiple choice included: it first
extracts the final answer from the whole response (`extract_answer`), then (`match_answer`) a reference and an
extracted answer that are both a time interval (a Python list of two numbers) are right at IoU > 0.7 of the spans as
given, both a box (`[a, b, c, d]` of four integers) at IoU > 0.5; any other pair goes to the judge's scoring prompt,
and only the reply "1" exactly is right. A scoring request that fails, or a geometry that raises (a box of zero
area), is wrong and counted; an item whose extraction fails is dropped (its `process_item` returns None). Accuracy is
right / counted, with the tables by dimension and by duration (0-60, 60-300, 300+ seconds) that `cau_acc.py` prints.

The CoT score (`eval.py` `recall`, `precision`; `cau_total.py`): two more requests per item, against the annotated
`reasoning` (meta `reasoning`, the list as released, formatted as Python writes it). Each reply must hold a ```json
block whose list gives every step a `step_type` (Video Description, Logical Inference or Background Review Steps) and
a `judgment` (recall: Matched or Unmatched; precision: Matched, Wrong or Redundant); a reply that does not is asked
again (the script asks until one parses; evr1 `COT_TRIES` times, then the item fails as a request does). Per item,
the Video and logic recall (precision) are Matched / (Matched + Unmatched (Wrong)) of their type, overall of the two
types together, none when the denominator is 0; a precision list with no step at all raises in the script (its
`efficiency`): the item is dropped. `cau_total.py` averages each over the items that have it, and its F1 is
2PR / (P + R) of those means. A request that fails drops the whole item (`process_item` returns None), from the
accuracy too; a record without `reasoning` (an EasyVideoR1 row) is not asked them and adds no step scores.

The judge step (`vcrbench_judge`) stores `{"extracted", "scoring", "correct", "recall", "precision"}` in the sample
row's `official` (the last two: step counts by type and judgment).

The judge prompts are quoted from `eval_code/prompt.py` (commit 4e564b7), escapes and typos included: the
extraction and scoring prompts as a fixed part and an input part (the only one formatted), the recall and precision
prompts formatted whole (their `{{`/`}}` are `str.format` escapes).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.annotation_rows import mc, plain, video
from evr1.eval.definition import JUDGE, Benchmark, Records, RowContext, easyvideor1_record
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.protocols import Official
from evr1.problem_types import ProblemType as PT
from evr1.rewards.judge_client import JudgeUnavailable, chat

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.specs import JudgeSpec

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def _without_choices(question: str, options: Sequence[str]) -> str:
    """The question stem, where VCR-Bench repeats the choices after it ("...?A. x\nB. y")."""
    at = question.find(f"A. {options[0]}")
    return question[:at] if at > 0 else question


def vcrbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A VCR-Bench row: `multiple-choice` flag, `choices` {"A".."D"} (empty strings when open-ended), `answer`
    a letter or free text, `dimension`, `duration`, `reasoning` (the annotated steps, kept as released for the official
    CoT score); the question is kept as released in meta `released_question`, for the official judge prompts (the MC
    question text repeats the choices)."""
    media = [video(ctx, row["video_path"])]
    meta = {"category": row.get("dimension"), "duration": row.get("duration"), "reasoning": row.get("reasoning"),
            "released_question": str(row["question"])}
    if row["multiple-choice"]:
        choices = row["choices"]
        options = [str(choices[k]).strip() for k in sorted(choices) if str(choices[k]).strip()]
        return [mc(row["id"], _without_choices(str(row["question"]), options), options, row["answer"], media,
                   question_kind="multiple-choice", **meta)]
    return [plain(row["id"], row["question"], "open_ended", row["answer"], media, question_kind="open-ended", **meta)]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


QUESTION_KINDS = {PT.MULTIPLE_CHOICE.value: "multiple-choice", PT.OPEN_ENDED.value: "open-ended"}


def vcrbench_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """The question kind (as the official importer names it) from the problem type."""
    record = easyvideor1_record(row, ctx)
    if record["problem_type"] in QUESTION_KINDS:
        record["meta"].setdefault("question_kind", QUESTION_KINDS[record["problem_type"]])
    return [record]


# -- official scorer ---------------------------------------------------------------------------------------------------


VCRBENCH_EXTRACTION = (
    'You are an AI assistant who will help me to extract an answer of a question. You are provided '
    'with a question and a response, and you need to find the final answer of the question. \n'
    '\n'
    'Extract Rule:\n'
    '[Multiple choice question]\n'
    '1. The answer could be answering the option letter or the value. You should directly output the '
    'choice letter of the answer. \n'
    '2. You should output a single uppercase character in A, B, C, D, E, F, G, H, I (if they are '
    'valid options), and Z.\n'
    '3. If the meaning of all options are significantly different from the final answer, output Z. \n'
    '[Non Multiple choice question]\n'
    '1. Output the final value of the answer. It could be hidden inside the last step of calculation '
    'or inference. Pay attention to what the question is asking for to extract the value of the '
    'answer.\n'
    '2. The final answer could also be a short phrase or sentence.\n'
    '3. If the answer is about a certain time period, such as from 1 minute 30 seconds to 2 minutes '
    '30 seconds, it should be given in the format [90, 150].\n'
    "4. If the response doesn't give a final answer, output Z.\n"
    '\n'
    'Output Format: \n'
    'Directly output the extracted answer of the response \n'
    '\n'
    'Example 1:\n'
    'Question: What is the main object in image?\n'
    'Options: A. teddy bear B. rabbit C. cat D. dog\n'
    'Response: a cute teddy bear\n'
    'Your output: A\n'
    'Example 2: \n'
    'Question: What is the main object in image?\n'
    'Options: A. teddy bear B. rabbit C. cat D. dog\n'
    'Answer: Spider\n'
    'Your output: Z\n'
    'Example 3:\n'
    'Question: On a flat playground, choose a Cartesian Oxy coordinate system (in unit of meters). A '
    'child running at a constant velocity $V=1 \\mathrm{~m} / \\mathrm{s}$ around a heart-shaped path '
    'satisfies the following order- 6 algebraic equation:\n'
    '$$\n'
    '\\left(x^{2}+y^{2}-L^{2}\\right)^{3}-L x^{2} y^{3}=0, L=10 \\text {. }\n'
    '$$\n'
    'When the child is at the position $(x, y)=(L, 0)$, what is the magnitude of their acceleration?\n'
    '\n'
    '<image>\n'
    'Response: fore, \\(r \\approx 10 \\, \\text{m}\\).\n'
    '\n'
    '7. **Calculating Acceleration**: Using the radius of curvature:\n'
    '   \\[\n'
    '   a_c = \\frac{V^2}{r} = \\frac{(1 \\, \\text{m/s})^2}{10 \\, \\text{m}} = 0.1 \\, \\text{m/s}^2\n'
    '   \\]\n'
    '\n'
    '8. **Magnitude of Acceleration**: The magnitude of the acceleration is the sum of the '
    'tangential and centripetal accelerations. Since the tangential acceleration is zero, the '
    'magnitude of the acceleration is purely centripetal:\n'
    '   \\[\n'
    '   \\text{Magnitude of acceleration} = a_c = 0.1 \\, \\text{m/s}^2\n'
    '   \\]\n'
    '\n'
    'Answer: \\boxed{0.1 \\, \\text{m/s}^2}\n'
    'Your output: 0.1 text{m/s}^2\n'
    'Example 4:\n'
    'Question: In the diagram, $O A=15, O P=9$ and $P B=4$. Determine the equation of the line '
    'through $A$ and $B$. Explain how you got your answer.\n'
    '\n'
    '<image>\n'
    'Response: The equation of the line through $A$ and $B$ is $y = -\x0c'
    'rac{1}{3}x + 12$. \n'
    '\n'
    'To find the equation of the line through $A$ and $B$, we first need to find the slope of the '
    'line. The slope of a line passing through two points $(x_1, y_1)$ and $(x_2, y_2)$ is given by '
    'the formula:\n'
    '\n'
    '$$\text{Slope} = \x0c'
    'rac{y_2 - y_1}{x_2 - x_1}$$\n'
    '\n'
    'Using the coordinates of points $A(0, 15)$ and $B(4, 0)$, we can calculate the slope as '
    'follows:\n'
    '\n'
    '$$\text{Slope} = \x0c'
    'rac{0 - 15}{4 - 0} = \x0c'
    'rac{-15}{4} = -\x0c'
    'rac{15}{4}$$\n'
    '\n'
    'Now that we have the slope, we can use the point-slope form of a linear equation to find the '
    'equation of the line. The point-slope form is given by:\n'
    '\n'
    '$$y - y_1 = m(x - x_1)$$\n'
    '\n'
    'where $(x_1, y_1)$ is a point on the line and $m$ is the slope. In this case, we can use point '
    '$A(0, 15)$ and the slope $-\x0c'
    'rac{15}{4}$:\n'
    '\n'
    '$$y - 15 = -\x0c'
    'rac{15}{4}(x - 0)$$\n'
    '\n'
    'Simplifying the equation, we get:\n'
    '\n'
    '$$y - 15 = -\x0c'
    'rac{15}{4}x$$\n'
    '\n'
    '$$y = -\x0c'
    'rac{15}{4}x + 15$$\n'
    '\n'
    'Therefore, the equation of the line through $A$ and $B$ is $y = -\x0c'
    'rac{15}{4}x + 15$.\n'
    'Your output: $y = -\x0c'
    'rac{15}{4}x + 15$\n'
    'Example 5:\n'
    'Question: <image> <image> <image> <image> <image> <image> <image> <image> <image>In the paper '
    "'An Object is Worth 64x64 Pixels: Generating 3D Object via Image Diffusion', what aspect of the "
    'proposed method does this figure aim to demonstrate?\n'
    'Response: the potential of this 3D generation paradigm to generate objects with PBR materials\n'
    'Your output: the potential of this 3D generation paradigm to generate objects with PBR '
    'materials\n'
    'Example 6:\n'
    "Question: Please specify the start and end time of the event 'An intro screen appears with a "
    "gray background and the red and white words that say PRO TRAINING.'\n"
    "Response: The start and end time of the event 'An intro screen appears with a gray background "
    "and the red and white words that say PRO TRAINING.' are as follows:\n"
    '\n'
    '**Step 1: Identify the start time of the event.**\n'
    'The video starts at 00:00. The intro screen is visible from the very beginning.\n'
    '\n'
    '**Start time:** 00:00\n'
    '\n'
    '**Step 2: Identify the end time of the event.**\n'
    'The intro screen starts to disappear and transition to the next scene at 00:11. By 00:12, the '
    'intro screen is completely gone. So, the intro screen is visible until 00:11.\n'
    '\n'
    '**End time:** 00:11\n'
    '\n'
    "Therefore, the event 'An intro screen appears with a gray background and the red and white "
    "words that say PRO TRAINING' starts at **00:00** and ends at **00:11**.\n"
    '\n'
    '**Answer:**\n'
    'Start time: 00:00\n'
    'End time: 00:11\n'
    'Your output: [0,11]\n'
    '\n'
)


VCRBENCH_EXTRACTION_INPUT = (
    '\n'
    'Question: {question}\n'
    'Answer: {response}\n'
    'Your output:\n'
)


VCRBENCH_SCORING = (
    'You are an AI assistant who will help me to judge whether two answers are consistent. \n'
    '\n'
    'Input Illustration:\n'
    '[Standard Answer] is the standard answer to the question \n'
    "[Model Answer] is the answer extracted from a model's output to this question. \n"
    '\n'
    'Task Illustration:\n'
    'Determine whether [Standard Answer] and [Model Answer] are consistent.\n'
    'Consistent Criteria:\n'
    '[Multiple-Choice questions]\n'
    '1. If the [Model Answer] is the option letter, then it must completely matches the [Standard '
    'Answer].\n'
    '2. If the [Model Answer] is not an option letter, then the [Model Answer] must completely match '
    'the option content of [Standard Answer].\n'
    '[Nan-Multiple-Choice questions]\n'
    '1. The [Model Answer] and [Standard Answer] should exactly match.\n'
    '2. If the meaning is expressed in the same way, it is also considered consistent, for example, '
    '0.5m and 50cm.\n'
    '\n'
    'Output Format: \n'
    '1. If they are consistent, output 1; if they are different, output 0.\n'
    '2. DIRECTLY output 1 or 0 without any other content.\n'
    '\n'
    'Example 1:\n'
    'Question: What is the main object in image?\\nOptions: A. teddy bear B. rabbit C. cat D. dog\n'
    '[Model Answer]: a cute teddy bear\n'
    '[Standard Answer]: A\n'
    'Your output: 1\n'
    '\n'
    'Example 2: \n'
    'Question: Find the value of AB. Choices: A.1;B.5;C.9;D.10\n'
    '[Model Answer]: \\\\boxed{5}\n'
    '[Standard Answer]: B\n'
    'Your output: 1\n'
    '\n'
    'Example 3: \n'
    'Question: Three of the following four slides are from the same presentation, but one is from a '
    'different one. Please identify the outlier: \\n\\n<image> <image> <image> <image>\\nA. the forth '
    'image\\nB. the second image\\nC. the third image\\nD. None of the choices provided\n'
    '[Model Answer]: \\\\boxed{B}\n'
    '[Standard Answer]: A\n'
    'Your output: 0\n'
    '\n'
    '\n'
)


VCRBENCH_SCORING_INPUT = (
    '\n'
    'Question: {question}\n'
    '[Model Answer]: {extract_answer}\n'
    '[Standard Answer]: {gt_answer}\n'
    'Your output:\n'
)


VCRBENCH_RECALL = (
    'You are an expert system for verifying solutions to video-based problems. Your task is to match the '
    'ground truth middle steps with the provided solution.\n'
    '\n'
    'INPUT FORMAT:\n'
    '1. Problem: The original question/task\n'
    '2. A Solution of a model\n'
    '3. Ground Truth: Essential steps required for a correct answer\n'
    '\n'
    'MATCHING PROCESS:\n'
    '\n'
    'You need to match each ground truth middle step with the solution:\n'
    '\n'
    'Match Criteria:\n'
    '- The middle step should exactly match in the content or is directly entailed by a certain content in '
    'the solution\n'
    '- All the details must be matched, including the specific value and content\n'
    '- You should judge all the middle steps for whethere there is a match in the solution\n'
    '\n'
    'Step Types:\n'
    '1. Logical Inference Steps\n'
    '   - Contains exactly one logical deduction\n'
    '   - Must produce a new derived conclusion\n'
    '   - Cannot be just a summary or observation\n'
    '\n'
    '2. Video Description Steps\n'
    '   - Pure visual observations\n'
    '   - Only includes directly visible elements\n'
    '   - No inferences or assumptions\n'
    '   - Contains event time\n'
    '\n'
    '3. Background Review Steps: \n'
    '   - Repetition or review of the problem\n'
    '   - Not directly related to solving the problem.\n'
    '\n'
    'OUTPUT FORMAT:\n'
    'JSON array of judgments:\n'
    '[\n'
    '  {{\n'
    '    "step": ground truth middle step,\n'
    '    "step_type": "Video Description Steps|Logical Inference Steps|Background Review Steps",\n'
    '    "judgment": "Matched" | "Unmatched",\n'
    '  }}\n'
    ']\n'
    '\n'
    'ADDITIONAL RULES:\n'
    '1. Only output the json array with no additional information.\n'
    '2. Judge each ground truth middle step in order without omitting any step.\n'
    '\n'
    'Here is the problem, answer, solution, and the ground truth middle steps:\n'
    '\n'
    '[Problem]\n'
    '{question}\n'
    '\n'
    '[Answer]\n'
    '{answer}\n'
    '\n'
    '[Solution]\n'
    '{solution}\n'
    '\n'
    '[Ground Truth Information]\n'
    '{gt_annotation}\n'
)


VCRBENCH_PRECISION = (
    '\n'
    '# Task Overview\n'
    'Given a solution with multiple reasoning steps for an video-based problem, reformat it into '
    'well-structured steps and evaluate their correctness.\n'
    '\n'
    '# Step 1: Reformatting the Solution\n'
    'Convert the unstructured solution into distinct reasoning steps while:\n'
    '- Preserving all original content and order\n'
    '- Not adding new interpretations\n'
    '- Not omitting any steps\n'
    '\n'
    '## Step Types\n'
    '1. Logical Inference Steps\n'
    '   - Contains exactly one logical deduction\n'
    '   - Must produce a new derived conclusion\n'
    '   - Cannot be just a summary or observation\n'
    '\n'
    '2. Video Description Steps\n'
    '   - Pure visual observations\n'
    '   - Only includes directly visible elements\n'
    '   - No inferences or assumptions\n'
    '   - Contains event time\n'
    '\n'
    '3. Background Review Steps: \n'
    '   - Repetition or review of the problem\n'
    '   - Not directly related to solving the problem.\n'
    '\n'
    '## Step Requirements\n'
    '- Each step must be atomic (one conclusion per step)\n'
    '- No content duplication across steps\n'
    '- Initial analysis counts as background information\n'
    '- Final answer determination counts as logical inference\n'
    '\n'
    '# Step 2: Evaluating Correctness\n'
    'Evaluate each step against:\n'
    '\n'
    '## Ground Truth Matching\n'
    'For video descriptions:\n'
    '- Key elements must match ground truth descriptions\n'
    '\n'
    'For logical inferences:\n'
    '- Conclusion must EXACTLY match or be DIRECTLY entailed by ground truth\n'
    '\n'
    'For Background review:\n'
    '-  Without special circumstances are deemed to be redundant\n'
    '\n'
    '## Reasonableness Check (if no direct match)\n'
    'If Step:\n'
    '- Premises must not contradict any ground truth or correct answer\n'
    '- Logic is valid\n'
    '- Conclusion must not contradict any ground truth \n'
    '- Conclusion must support or be neutral to correct answer\n'
    '- Helpful in solving the problem, non-redundant steps\n'
    'this Step be viewed as matched.\n'
    '\n'
    '## Judgement Categories\n'
    '- "Match": Aligns with ground truth\n'
    '- "Wrong": Contradictory with ground truth\n'
    '- "Redundant": Redundant steps that do not help solve the problem\n'
    '\n'
    '# Output Requirements\n'
    '1. The output format MUST be in valid JSON format without ANY other content.\n'
    '2. For highly repetitive patterns, output it as a single step.\n'
    '3. Output maximum 35 steps. Always include the final step that contains the answer.\n'
    '\n'
    'Here is the json output format:\n'
    '## Output Format\n'
    '[\n'
    '  {{\n'
    '    "step": "reformatted the solution step",\n'
    '    "step_type": "Video Description Steps|Logical Inference Steps|Background Review Steps",\n'
    '    "reasons_for_judgment": "The reason for judging the matching result of the step in the solution '
    'based on Ground Truth Information. Sufficient evidence needs to be found in Ground Truth Information '
    'to determine the correctness of the reformatted the solution step. The video event description time '
    'error is no more than 3 seconds and is considered correct. If the solution step does not specify the '
    'time, it is considered wrong.",\n'
    '    "judgment": "Matched|Wrong|Redundant",\n'
    '  }}\n'
    ']\n'
    '\n'
    'Here is the problem, and the solution that needs to be reformatted to steps:\n'
    '\n'
    '[Problem]\n'
    '{question}\n'
    '\n'
    '[Solution]\n'
    '{solution}\n'
    '\n'
    '[Ground Truth Information]\n'
    '{gt_annotation}\n'
)


VCRBENCH_REQUEST = {"max_tokens": 2048}  # `get_output_wo_image(prompt, max_tokens=2048)`: the prompt as one user message
STEP_TYPES = {"Video": "Video Description Steps", "logic": "Logical Inference Steps",
              "background": "Background Review Steps"}


RECALL_JUDGMENTS = ("Matched", "Unmatched")
PRECISION_JUDGMENTS = ("Matched", "Wrong", "Redundant")
COT_METRICS = ("Video", "logic", "overall")  # what `cau_total.py` averages (background is left out)
COT_TRIES = 10  # replies asked for one step list before the item fails (the script asks until one parses)
_JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.DOTALL)


def official_question(record: Record) -> str:
    """The question as released (a multiple-choice one repeats its choices after the stem, "...?A. x\\nB. y\\n"):
    the importer's `released_question` meta, else the question (a multiple-choice one with its choices appended in
    that form)."""
    if "released_question" in record.meta:
        return str(record.meta["released_question"])
    if not record.options:
        return record.problem
    return record.problem + "".join(f"{LETTERS[i]}. {text}\n" for i, text in enumerate(record.options))


def _interval(text: Any) -> list[float] | None:
    """A Python literal list of two numbers (bools count, as `isinstance(x, int)`), else None."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(x, int | float) for x in value):
        return value
    return None


def _box(text: str) -> list[int] | None:
    """"[a, b, c, d]" exactly from the first to the last character, each part an `int()` literal, else None."""
    if not (text.startswith("[") and text.endswith("]")):
        return None
    parts = text[1:-1].split(",")
    if len(parts) != 4:
        return None
    try:
        return [int(part.strip()) for part in parts]
    except ValueError:
        return None


def time_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """IoU of two spans as given (a reversed one is not swapped: it overlaps nothing); the union is the hull; 0 when
    the hull is empty."""
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    hull = max(a[1], b[1]) - min(a[0], b[0])
    return 0.0 if hull == 0 else inter / hull


def box_iou(a: Sequence[int], b: Sequence[int]) -> float:
    """IoU of two `[x1, y1, x2, y2]` boxes as given; ZeroDivisionError when the union area is 0."""
    x1, y1, x2, y2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    if x2 < x1 or y2 < y1:
        return 0.0
    inter = (x2 - x1) * (y2 - y1)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def geometry_verdict(answer: Any, extracted: str) -> bool | None:
    """The official geometric check of an extracted answer: True/False when the reference and the extraction are both
    intervals (IoU > 0.7) or both boxes (IoU > 0.5; a zero union is False), None when the judge must score them."""
    truth, pred = _interval(answer), _interval(extracted)
    if truth is not None and pred is not None:
        return time_iou(truth, pred) > 0.7
    if not isinstance(answer, str):
        return False  # the official box check calls str methods on it and fails: scored 0
    truth_box, pred_box = _box(answer), _box(extracted)
    if truth_box is not None and pred_box is not None:
        try:
            return box_iou(truth_box, pred_box) > 0.5
        except ZeroDivisionError:
            return False
    return None


def step_counts(reply: str, judgments: Sequence[str]) -> dict[str, dict[str, int]] | None:
    """The steps of a recall or precision reply counted `{step type: {judgment: n}}` (every type and judgment listed),
    as `extract_json_between_backticks` and `calculate_recall` / `calculate_precision` count them: the first ```json
    block, stripped, must be JSON whose items (a list's elements; a string's characters and an object's keys, which
    fail) each are an object with a known `step_type` and one of `judgments`; None when it is not."""
    found = _JSON_BLOCK.search(reply)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1).strip())
    except ValueError:
        return None
    if not isinstance(value, list | str | dict):
        return None
    counts = {kind: dict.fromkeys(judgments, 0) for kind in STEP_TYPES.values()}
    for step in value:
        kind = step.get("step_type") if isinstance(step, dict) else None
        judgment = step.get("judgment") if isinstance(step, dict) else None
        if not (isinstance(kind, str) and kind in counts and isinstance(judgment, str) and judgment in judgments):
            return None
        counts[kind][judgment] += 1
    return counts


def _asked_steps(judge: JudgeSpec, prompt: str, judgments: Sequence[str]) -> dict[str, dict[str, int]]:
    """The step counts of the first of `COT_TRIES` replies that holds a step list (JudgeUnavailable: none did)."""
    for _ in range(COT_TRIES):
        counts = step_counts(chat(judge, None, prompt, options=VCRBENCH_REQUEST), judgments)
        if counts is not None:
            return counts
    raise JudgeUnavailable(f"no reply held a step list ({COT_TRIES} asked)")


def vcrbench_judge(record: Record, response: str, judge: JudgeSpec) -> dict[str, Any]:
    """The official judgement of one answer, in the script's order: the extraction, the geometric check, else the
    scoring reply ("1" exactly is right; an unreachable judge is wrong, with `error` so that a resume asks again),
    then the recall and precision step counts (when the record has its `reasoning`). JudgeUnavailable from the
    extraction or a step request propagates: the item is dropped until a resume asks again."""
    question = official_question(record)
    extracted = chat(judge, None, VCRBENCH_EXTRACTION + VCRBENCH_EXTRACTION_INPUT.format(
        question=question, response=response), options=VCRBENCH_REQUEST)
    verdict = geometry_verdict(record.answer, extracted)
    found: dict[str, Any] = {"extracted": extracted, "scoring": None, "correct": verdict}
    if verdict is None:
        prompt = VCRBENCH_SCORING + VCRBENCH_SCORING_INPUT.format(question=question, extract_answer=extracted,
                                                                  gt_answer=record.answer)
        try:
            scoring = chat(judge, None, prompt, options=VCRBENCH_REQUEST)
            found |= {"scoring": scoring, "correct": scoring == "1"}
        except JudgeUnavailable as exc:
            found |= {"correct": False, "error": f"official judge: {exc}"}
    if "reasoning" in record.meta:
        reasoning = record.meta["reasoning"]
        found["recall"] = _asked_steps(judge, VCRBENCH_RECALL.format(
            question=question, answer=record.answer, solution=response, gt_annotation=reasoning), RECALL_JUDGMENTS)
        found["precision"] = _asked_steps(judge, VCRBENCH_PRECISION.format(
            question=question, solution=response, gt_annotation=reasoning), PRECISION_JUDGMENTS)
    return found


def _ratio(counts: Mapping[str, Mapping[str, int]], kinds: Sequence[str], miss: str) -> float | None:
    """Matched / (Matched + `miss`) over the step types `kinds`; None when that is 0 / 0 (the script's "")."""
    matched = sum(counts[STEP_TYPES[k]]["Matched"] for k in kinds)
    total = matched + sum(counts[STEP_TYPES[k]][miss] for k in kinds)
    return matched / total if total else None


def item_steps(verdict: Mapping[str, Any]) -> dict[str, float | None] | None:
    """An item's `{Video,logic,overall}_{recall,precision}` (None: the script's ""; absent: not asked); None when its
    precision list has no step at all (the script's `efficiency` divides by zero: the item is dropped)."""
    scores: dict[str, float | None] = {}
    for name, miss in (("recall", "Unmatched"), ("precision", "Wrong")):
        counts = verdict.get(name)
        if counts is None:
            continue
        if name == "precision" and not sum(n for per in counts.values() for n in per.values()):
            return None
        for metric in COT_METRICS:
            kinds = ("Video", "logic") if metric == "overall" else (metric,)
            scores[f"{metric}_{name}"] = _ratio(counts, kinds, miss)
    return scores


def duration_range(duration: Any) -> str:
    """`cau_acc.py`'s duration bucket of a number of seconds (none: 0)."""
    seconds = float(duration or 0)
    return "0-60" if seconds <= 60 else "60-300" if seconds <= 300 else "300+"


def vcrbench_item(row: Row) -> dict[str, Any] | None:
    """The official verdict (row `official`) and its step scores (`cot`), with the row's duration as its official
    bucket; an item the judge could not finish (no extraction: an unreachable judge) or whose precision list is empty
    is dropped; a failed generation (no response) is wrong and counted, with no step scores."""
    meta = {**(row.get("meta") or {}), "duration": duration_range((row.get("meta") or {}).get("duration"))}
    if row.get("response") is None:
        return {"score": 0.0, "meta": meta, "cot": {}}
    verdict = row.get("official") or {}
    steps = item_steps(verdict)
    if "extracted" not in verdict or steps is None:
        return None
    return {"score": float(verdict.get("correct") is True), "meta": meta, "cot": steps}


def vcrbench_metrics(rows: Sequence[Row]) -> Aggregate:
    """`cau_acc.py`'s accuracy and tables, and `cau_total.py`'s precision, recall and F1 (percent) of each of
    Video, logic and overall that some item has a value of: each the mean over the items with a value (0 with none),
    F1 = 2PR / (P + R) of the two means (0 when both are 0)."""
    result = agg.accuracy("question_kind", "category", "duration")(rows)
    metrics = dict(result.metrics)
    for metric in COT_METRICS:
        means = {}
        for name in ("precision", "recall"):
            values = [v for r in rows if (v := (r.get("cot") or {}).get(f"{metric}_{name}")) is not None]
            means[name] = (sum(values) / len(values) if values else 0.0, bool(values))
        if not any(seen for _, seen in means.values()):
            continue
        p, r = means["precision"][0], means["recall"][0]
        metrics |= {f"{metric}_precision": 100 * p, f"{metric}_recall": 100 * r,
                    f"{metric}_f1": 100 * (2 * p * r / (p + r) if p + r > 0 else 0.0)}
    return Aggregate(result.score, metrics, result.breakdowns)


VCRBENCH = Official(
    "accuracy: right / judged items (the judge extracts every answer; intervals right at IoU > 0.7, boxes at IoU > 0.5,"
    " other answers by the official scoring prompt, \"1\" exactly); by dimension and duration (0-60, 60-300, 300+ s);"
    " the CoT score: precision, recall and F1 of the reasoning steps (Video, logic, overall)",
    vcrbench_metrics, vcrbench_item,
    source="zhishuifeiqian/VCR-Bench eval_code/eval.py, prompt.py, cau_acc.py and cau_total.py (commit 4e564b7:"
           " extract_answer, match_answer, recall, precision, calculate_accuracy, calculate_metrics)",
    judge=vcrbench_judge,
)


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"vcrbench.json": [  # VCR-Bench rows (github.com/zhishuifeiqian/VCR-Bench eval_code/input.json)
    {"id": 1, "video_path": "video/sample/vc1.mp4", "duration": 4, "dimension": "Video Plot Analysis",
     "question": "What colour is the square?A. red\nB. blue\nC. green\nD. yellow\n", "multiple-choice": True,
     "choices": {"A": "red", "B": "blue", "C": "green", "D": "yellow"}, "answer": "B",
     "reasoning": ["1. 0:00-0:04, a blue square is shown."]},
    {"id": 2, "video_path": "video/sample/vc1.mp4", "duration": 4, "dimension": "Temporal Spatial Reasoning",
     "question": "Describe the motion.", "multiple-choice": False, "choices": {"A": "", "B": "", "C": "", "D": ""},
     "answer": "The square moves to the right.", "reasoning": ["1. 0:00-0:04, the square moves to the right."]},
]}


BENCHMARK = Benchmark(
    name="vcrbench",
    title="VCR-Bench",
    folder="vcrbench",
    annotations=("vcrbench.json",),
    media_dir="videos",
    question_types=(PT.MULTIPLE_CHOICE, PT.OPEN_ENDED),
    metric="accuracy over all items (open-ended judged correct or incorrect), by question kind and dimension",
    aggregate=agg.accuracy("question_kind", "category"),
    importer=vcrbench,
    routes=JUDGE,
    easyvideor1=vcrbench_easyvideor1,
    official=VCRBENCH,
    fixtures=FIXTURES,
)
