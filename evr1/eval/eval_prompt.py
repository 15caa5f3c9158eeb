"""The question text of an evaluation sample: question, lettered options, answer instruction.

Two prompt modes: `direct` asks for the bare answer (the Qwen-VL evaluation style), `reason`
asks for thinking in `<think>` tags and the answer in `<answer>` tags (the RL training style).
Option letters are the real ones (A..N on Video-MMMU), never a fixed "A, B, C or D".
The chat layout and media placeholders come from `evr1.models.build_prompt`.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from evr1.data.records import Record
from evr1.problem_types import ProblemType

PromptMode = Literal["direct", "reason"]
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

REASON_SUFFIX = (
    "Think about the question step by step inside <think> </think> tags, then give the final answer"
    " inside <answer> </answer> tags."
)


def letters_phrase(count: int) -> str:
    """'A, B, C or D' for four options."""
    shown = list(LETTERS[:count])
    return shown[0] if count == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def instruction(record: Record) -> str:
    """What form the answer must take, by problem type: a form evr1's reader reads, and the official reader too where
    evr1 reproduces one (temporal grounding: "start - end", read alike by Charades-STA's task, which reads a JSON
    "[start, end]" as one number: `evr1.eval.benchmarks.charades_sta`)."""
    ptype = record.problem_type
    if ptype is ProblemType.MULTIPLE_CHOICE:
        count = len(record.options) if record.options else int(record.meta.get("option_count", 4))
        return f"Answer with the letter ({letters_phrase(count)}) of the correct option."
    return {
        ProblemType.NUMERICAL: "Answer with a single number.",
        ProblemType.REGRESSION: "Answer with a single number.",
        ProblemType.BOOLEAN: "Answer yes or no.",
        ProblemType.TEMPORAL_GROUNDING: "Give the start and end time of the moment in seconds as: start - end.",
        ProblemType.SPATIAL_TEMPORAL_GROUNDING: (
            'Give the time span in seconds and the box of the target at each second as JSON: '
            '{"time": [start, end], "boxes": {"<second>": [x1, y1, x2, y2], ...}}.'
        ),
        ProblemType.SPATIAL_GROUNDING: "Give the box of the target as [x1, y1, x2, y2].",
        ProblemType.TRACKING: 'Give the box of the target at each second as JSON: {"<second>": [x1, y1, x2, y2], ...}.',
    }.get(ptype, "Answer the question briefly.")


def eval_question_text(record: Record, mode: PromptMode = "direct") -> str:
    """The full user text of a sample (media placeholders are added by the chat template)."""
    parts = [record.problem.strip()]
    if record.options:
        parts.append("Options:\n" + "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(record.options)))
    parts.append(instruction(record))
    if mode == "reason":
        parts.append(REASON_SUFFIX)
    return "\n".join(parts)


def prompt_hash(text: str) -> str:
    """A short stable hash of a prompt (the rendered chat text), recorded with every sample."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
