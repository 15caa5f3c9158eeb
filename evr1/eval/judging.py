"""Official LLM-judge steps: the judge requests an official scorer makes, with its prompt wording and its verdict
parsing, sent to evr1's configurable OpenAI-compatible endpoint (`EvalSpec.judge`, `evr1.rewards.judge_client`).

A step (`Official.judge`) asks the judge about one answered item and returns what the official item rule reads,
stored in the sample row under `official`; an unreachable judge gives `{"error": ...}` there (the item rule scores it
as the official script scores a missing judge output, and a resume asks again). The steps and their prompts live in the
benchmarks' modules (`evr1.eval.benchmarks.<name>`); this module runs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from evr1.rewards.judge_client import JudgeUnavailable

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.eval.definition import Benchmark
    from evr1.specs import JudgeSpec


def officially_asked(bench: Benchmark, judge: JudgeSpec) -> bool:
    """Whether `bench`'s official judge step (if any) runs with `judge`: when one is set. Without, an optional step is
    skipped (`Official.judge_optional`: the item rule scores without it), and a needed one leaves the official block
    unavailable (allowed only under a `strict` headline: `evr1.eval.api.require_judge`)."""
    return bool(judge.base_url and judge.model)


def official_judged(bench: Benchmark, records: Sequence[Record], responses: Sequence[str],
                    judge: JudgeSpec) -> list[Mapping[str, Any] | None]:
    """The official judge step's result for each answered record (None for all when `bench` has none, or no judge is
    set), concurrently (`judge.concurrency`); an unreachable judge gives `{"error": message}`."""
    step = bench.official.judge if bench.official is not None else None
    if step is None or not officially_asked(bench, judge):
        return [None] * len(records)

    def one(pair: tuple[Record, str]) -> Mapping[str, Any]:
        try:
            return step(pair[0], pair[1], judge)
        except JudgeUnavailable as exc:
            return {"error": f"official judge: {exc}"}

    with ThreadPoolExecutor(max_workers=max(1, min(judge.concurrency, len(records)))) as threads:
        return list(threads.map(one, zip(records, responses)))

