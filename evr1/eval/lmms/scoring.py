"""lmms-eval task functions for the benchmarks evr1 scores itself (the task folders without `evr1_stock`).

    doc_to_messages: !function evr1.eval.lmms.scoring.doc_to_messages
    process_results: !function evr1.eval.lmms.scoring.process_results
    metric_list: [{metric: stvg, aggregation: !function evr1.eval.lmms.scoring.aggregate, higher_is_better: true}]

A document carries its record (`evr1_record`, `evr1_media`: see `evr1.eval.lmms.tasks`). The prompt is evr1's own
(`evr1.eval.eval_prompt.eval_question_text`, mode from `lmms_eval_specific_kwargs.prompt_mode`); each
response is scored by the benchmark's reward router (`evr1.eval.samples.score_responses`) into the
sample row evr1's evaluator writes, and the rows are aggregated by the benchmark's official rule
under the official protocol (`evr1.eval.protocols`, the headline of `evr1 eval run` by default): the numbers
equal `evr1.eval.api.evaluate`'s official block (tested), except that the
scorers see no frame timestamps here, so a grounding answer given as frame indices rather than
seconds scores differently. Failed or unparseable answers count as the official scorer counts them.

`process_results` gives the row under the benchmark's name (the headline score, `aggregate`) and
under those named official metrics that have an aggregation here (`NAMED_METRICS`: STVG's
`m_tIoU`, `vIoU@0.3`, `vIoU@0.5`).
Open-ended answers are judged right or wrong (the benchmark's route, `open_ended_verdict_judge`: 1 or 0, a
reply without a verdict a failure) by an OpenAI-compatible endpoint set by the environment
(lmms-eval passes task functions nothing else): `EVR1_JUDGE_URL`, `EVR1_JUDGE_MODEL`, and the
key, if any, in `EVR1_JUDGE_API_KEY`. A judged question without them is a ConfigError naming them
(`evr1.eval.api.require_judge`, the check `evr1 eval run` makes), raised by `doc_to_messages` (the evr1
models read every request's messages before generating) and by `process_results`, which also runs the
benchmark's official judge step (`Official.judge`: MMVU, VCR-Bench, VideoReasonBench) for the official block.
Routers are built once per benchmark, judge and problem type (`router`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evr1.data.records import Record
from evr1.errors import ConfigError, Evr1Error
from evr1.eval import aggregate as agg
from evr1.eval.definition import Benchmark
from evr1.eval.eval_prompt import PromptMode, eval_question_text

if TYPE_CHECKING:
    from evr1.rewards import RewardRouter
    from evr1.specs import JudgeSpec

JUDGE_URL_ENV, JUDGE_MODEL_ENV, JUDGE_KEY_ENV = "EVR1_JUDGE_URL", "EVR1_JUDGE_MODEL", "EVR1_JUDGE_API_KEY"
MODES: tuple[PromptMode, ...] = ("direct", "reason")
Doc = Mapping[str, Any]  # an lmms-eval document
ItemRow = dict[str, Any]  # a scored item, evr1's sample row


def benchmark_of(name: str) -> Benchmark:
    from evr1.registry import BENCHMARKS

    return BENCHMARKS.get(name)


def doc_record(doc: Mapping[str, Any]) -> Record:
    """The record a document was made from (`evr1_record` + `evr1_media`; nulls the JSON loader added dropped)."""
    fields = dict(doc["evr1_record"])
    media = [{"kind": m["type"], "path": m["path"], "start": m.get("video_start"), "end": m.get("video_end")}
             for m in doc["evr1_media"]]
    fields.update(media=media, meta={k: v for k, v in (fields.get("meta") or {}).items() if v is not None})
    try:
        return Record.model_validate(fields)
    except ValidationError as exc:
        raise Evr1Error(f"lmms-eval document {doc.get('evr1_id')!r}: not an evr1 record: {exc.errors()[0]['msg']}"
                        f" at {exc.errors()[0]['loc']}") from None


def prompt_mode(kwargs: Mapping[str, Any] | None) -> PromptMode:
    mode = (kwargs or {}).get("prompt_mode", "direct")
    if mode not in MODES:
        raise ConfigError(f"lmms_eval_specific_kwargs.prompt_mode: {mode!r} is not one of {list(MODES)}")
    return mode


def doc_to_text(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The question as evr1's evaluator words it (options lettered, answer instruction)."""
    return eval_question_text(doc_record(doc), prompt_mode(lmms_eval_specific_kwargs))


def doc_to_messages(doc: Mapping[str, Any], lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One user turn: the media (clips with `start_time`/`end_time`), then the question text.

    A question the judge scores fails here when no judge is set, before the evr1 models generate.
    """
    judge_spec(benchmark_of(doc["evr1_benchmark"]), [doc["evr1_record"]["problem_type"]])
    content: list[dict[str, Any]] = []
    for m in doc["evr1_media"]:
        item: dict[str, Any] = {"type": m["type"], "url": m["path"]}
        if m.get("video_start") is not None:
            item["start_time"] = m["video_start"]
        if m.get("video_end") is not None:
            item["end_time"] = m["video_end"]
        content.append(item)
    content.append({"type": "text", "text": doc_to_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


# -- scoring --------------------------------------------------------------------------------------


JUDGE_HINT = (f"set {JUDGE_URL_ENV} (an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1) and {JUDGE_MODEL_ENV}"
              f" (its model name); {JUDGE_KEY_ENV} if it needs a key")


def env_judge() -> JudgeSpec:
    """The judge set in the environment (`base_url`/`model` None where unset)."""
    from evr1.specs import JudgeSpec

    return JudgeSpec(base_url=os.environ.get(JUDGE_URL_ENV), model=os.environ.get(JUDGE_MODEL_ENV),
                     api_key_env=JUDGE_KEY_ENV if os.environ.get(JUDGE_KEY_ENV) else None)


def judge_spec(bench: Benchmark, problem_types: Sequence[str]) -> JudgeSpec:
    """The judge from the environment; a ConfigError naming the variables when a judged type lacks it."""
    from evr1.eval.api import require_judge

    judge = env_judge()
    require_judge(bench, judge, problem_types, JUDGE_HINT)
    return judge


@cache
def router(benchmark: str, judge: JudgeSpec, problem_type: str) -> RewardRouter:
    """The reward router scoring `problem_type` answers of `benchmark` with `judge` (built once per combination)."""
    from evr1.eval.api import reward_router

    return reward_router(benchmark_of(benchmark), judge, [problem_type], JUDGE_HINT)


_named: dict[str, tuple[str, ...]] = {}


def named_metrics(bench: Benchmark, row: Mapping[str, Any]) -> tuple[str, ...]:
    """The `NAMED_METRICS` among `bench`'s official metrics (found once per benchmark, from its first row)."""
    if bench.name not in _named:
        _named[bench.name] = tuple(m for m in official(bench, [row])["metrics"] if m in NAMED_METRICS)
    return _named[bench.name]


def response_of(results: Sequence[Any]) -> str:
    """The generated text among lmms-eval's `results` ("" for none; some lmms-eval paths wrap it in a list)."""
    first = results[0] if results else ""
    if isinstance(first, list):
        first = first[0] if first else ""
    return "" if first is None else str(first)


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Score the response with the benchmark's router; the sample row under each metric key."""
    from evr1.eval.judging import official_judged
    from evr1.eval.samples import sample_row, score_responses

    bench, record = benchmark_of(doc["evr1_benchmark"]), doc_record(doc)
    response = results[0] if results else ""
    scorer = router(bench.name, env_judge(), record.problem_type.value)
    [judged] = official_judged(bench, [record], [response], scorer.spec.judge)
    row = sample_row(bench, record, response, score_responses([record], [response], scorer)[0], judged)
    return {key: row for key in (bench.name, *named_metrics(bench, row))}


def item_row(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """The scored item of a stock-based task, as evr1's evaluator writes it (`score`, `meta`, `components`, ...)."""
    return process_results(doc, [response_of(results)])[doc["evr1_benchmark"]]


def official_results(*metrics: str) -> Callable[[Mapping[str, Any], Sequence[Any]], dict[str, dict[str, Any]]]:
    """A `process_results` for a stock-based task: evr1's sample row (`item_row`) under each of `metrics`, for the
    aggregations by the official protocol (`aggregate`, `official_fraction`, `named_metric`)."""

    def process(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, dict[str, Any]]:
        item = item_row(doc, results)
        return {metric: item for metric in metrics}

    process.__name__ = process.__qualname__ = f"official_{metrics[0]}"
    return process


# -- aggregation ----------------------------------------------------------------------------------


def percent(rows: Sequence[Mapping[str, Any]]) -> float:
    """Mean `score` of every item (unanswered ones included), in percent: evr1's accuracy rule."""
    return agg.accuracy()(rows).score


def fraction(rows: Sequence[Mapping[str, Any]]) -> float:
    """Mean `score` of every item as a fraction (0-1, the scale of some stock tasks)."""
    return sum(float(r["score"]) for r in rows) / len(rows) if rows else 0.0


def official(bench: Benchmark, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The official protocol's block of `rows` (`evr1.eval.protocols`): the numbers the lmms-eval path reports. Where
    the official scorer chooses answers by logits (LiveSports-3K) the generated texts hold none: the block is
    unavailable, its numbers NaN (`aggregate`)."""
    from evr1.eval.protocols import official_block

    return official_block(bench, rows)


def official_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """`row` with its official item score (`evr1.eval.protocols.official_rows`; for a benchmark whose official scorer
    never drops an item, as TempCompass's)."""
    from evr1.eval.protocols import official_rows

    [kept], _ = official_rows(benchmark_of(row["benchmark"]), [row])
    return kept


def aggregate(rows: Sequence[Mapping[str, Any]]) -> float:
    """The benchmark's headline under the official protocol (percent; NaN where it is unavailable)."""
    score = official(benchmark_of(rows[0]["benchmark"]), rows)["score"]
    return float("nan") if score is None else score


def official_fraction(rows: Sequence[Mapping[str, Any]]) -> float:
    """The benchmark's headline under the official protocol as a fraction (0-1, the scale of some stock tasks)."""
    return aggregate(rows) / 100.0


def named_metric(name: str, table: str | None = None, scale: float = 1.0) -> Callable[[Sequence[Mapping[str, Any]]], float]:
    """An aggregation giving the benchmark's official metric `name` (percent), or with `table` the score of label
    `name` in that official breakdown (Video-MME-v2's `level` "2"); times `scale` (0.01: a stock fraction scale).
    A breakdown label the rows lack is NaN (no metric), as an official metric for a kind the rows lack (Video-MME-v2's
    `logic_score` without logic groups)."""

    def metric(rows: Sequence[Mapping[str, Any]]) -> float:
        block = official(benchmark_of(rows[0]["benchmark"]), rows)
        value = block["metrics"].get(name) if table is None else block["breakdowns"].get(table, {}).get(name, {}).get("score")
        return float("nan") if value is None else value * scale

    metric.__name__ = metric.__qualname__ = f"aggregate_{name}" if table is None else f"aggregate_{table}_{name}"
    return metric


m_tiou = named_metric("m_tIoU")
viou_03 = named_metric("vIoU@0.3")
viou_05 = named_metric("vIoU@0.5")
# the named official metrics a task may aggregate besides the headline (STVG's)
NAMED_METRICS = {"m_tIoU": m_tiou, "vIoU@0.3": viou_03, "vIoU@0.5": viou_05}
