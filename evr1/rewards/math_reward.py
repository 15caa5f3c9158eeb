"""Math: symbolic equivalence with `math-verify`, in worker processes with a process-level timeout.

math-verify's own timeout uses `signal.alarm` (main thread only) and sympy can run for minutes
on hostile input, so each check runs in a persistent worker process (`RewardSpec.math_workers`)
that is killed and replaced when it overruns `RewardSpec.math_timeout_s`. LaTeX without `$`
delimiters is read as LaTeX (`$…$`) first, then as a plain expression.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from evr1.rewards.extract import answer_of
from evr1.rewards.process_pool import shared_pool

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput, ScorerValue
    from evr1.specs import RewardSpec

MAX_CHARS = 4_000  # longer answers are not sent to sympy


def warm_up() -> None:
    """Import math-verify (and sympy) once per worker."""
    import math_verify  # noqa: F401


def _parse(text: str) -> list:
    from math_verify import parse

    if "$" in text or "\\boxed" in text:
        return parse(text)
    return parse(f"${text}$") or parse(text)


def equivalent(gold: str, prediction: str) -> bool:
    """math-verify's verdict (runs inside a worker process)."""
    from math_verify import verify

    parsed_gold, parsed = _parse(gold), _parse(prediction)
    return bool(parsed_gold) and bool(parsed) and bool(verify(parsed_gold, parsed))


def suits(text: str, inp: RewardInput) -> bool:
    return bool(text.strip())


def _one(inp: RewardInput, spec: RewardSpec) -> ScorerValue:
    gold = str(inp.answer).strip()
    if not gold:
        return ValueError(f"math answer {inp.answer!r} is empty")
    text = answer_of(inp, spec)
    if not text or len(text) > MAX_CHARS:
        return 0.0
    workers = shared_pool(f"{__name__}:equivalent", spec.math_workers, warm_up=f"{__name__}:warm_up")
    try:
        return 1.0 if workers.call(gold, text, timeout=spec.math_timeout_s) else 0.0
    except Exception as exc:  # noqa: BLE001 - a timeout or crash is this sample's result
        return exc


def score(inputs: Sequence[RewardInput], spec: RewardSpec) -> list[ScorerValue]:
    """Math: 1 when math-verify finds the answer equivalent to the reference (process-level timeout)."""
    with ThreadPoolExecutor(max_workers=max(1, min(spec.math_workers, len(inputs)))) as threads:
        return list(threads.map(lambda inp: _one(inp, spec), inputs))
