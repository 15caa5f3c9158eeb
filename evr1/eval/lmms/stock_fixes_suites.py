"""Replacements for stock lmms-eval 0.7.3 functions of MVBench, TempCompass, MMVU, Video-MMMU, VideoMathQA,
VSI-Bench, Charades-STA and OVO-Bench that cannot work on local data or disagree with the official metric.

Each item is scored as `evr1 eval` scores it (`evr1.eval.lmms.scoring`: the benchmark's reward router,
open-ended answers by the judge set in `EVR1_JUDGE_URL` / `EVR1_JUDGE_MODEL`) into evr1's sample row;
aggregations are the official protocol's (`evr1.eval.protocols`: the official readers and denominators), in percent. TempCompass captioning keeps the stock judge (it answers a
multiple-choice question from the caption, the official protocol); a missing key fails before generation,
a judge failure at aggregation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Self

from evr1.errors import ConfigError, Evr1Error
from evr1.eval.lmms import scoring
from evr1.eval.lmms.scoring import item_row, named_metric, official_results, percent, response_of

Doc = Mapping[str, Any]
Row = dict[str, Any]
Aggregation = Callable[[Sequence[Row]], float]


# -- MVBench: divide by every item, not the answered ones ----------------------------------------


mvbench_process_results = official_results("mvbench_accuracy")


# -- TempCompass: rule-matched or unmatched, never a silent remote call --------------------------


TEMPCOMPASS_DIMENSIONS = ("action", "speed", "direction", "order", "attribute_change")


def tempcompass_metrics(item: Row) -> dict[str, Row]:
    """The item under `avg_accuracy` and every `<dimension>_accuracy`: each metric sees every item, so
    lmms-eval's task size (the item count of the last metric) is right and the group mean is weighted by it."""
    return {"avg_accuracy": item, **{f"{d}_accuracy": item for d in TEMPCOMPASS_DIMENSIONS}}


def tempcompass_process_results(doc: Doc, results: Sequence[Any]) -> dict[str, Row]:
    """multi-choice, yes_no, caption_matching: the official item score (the matching rules, then the fallback judge
    when one is set: `evr1.eval.official_formats`); the stock aggregation reads `rating`."""
    item = scoring.official_row(item_row(doc, results))
    item["rating"] = int(item["score"] >= 1.0)
    return tempcompass_metrics(item)


def judged(rows: Sequence[Row]) -> Sequence[Row]:
    """The rows, once no captioning judge failed (rating -1); else an Evr1Error naming the items.

    Raised at aggregation, not in `process_results`: lmms-eval retries a raising `process_results` 5
    times (tenacity), paying for the judge calls again and hiding the error in a RetryError."""
    failed = [r["id"] for r in rows if r.get("rating") == -1]
    if failed:
        raise Evr1Error(f"TempCompass captioning: the LLM judge gave no answer for {len(failed)} item(s) ({', '.join(failed[:5])});"
                        " check OPENAI_API_URL / OPENAI_API_KEY and run again")
    return rows


def dimension_metric(dimension: str) -> Aggregation:
    """An aggregation giving the accuracy over the items of one dimension (NaN when the task has none)."""

    def metric(rows: Sequence[Row]) -> float:
        chosen = [r for r in judged(rows) if r["meta"].get("dimension") == dimension]
        return percent(chosen) if chosen else float("nan")

    metric.__name__ = metric.__qualname__ = f"tempcompass_{dimension}"
    return metric


# Module attributes: the templates name them (`!function ...stock_fixes_suites.tempcompass_<dimension>`).
tempcompass_action = dimension_metric("action")
tempcompass_speed = dimension_metric("speed")
tempcompass_direction = dimension_metric("direction")
tempcompass_order = dimension_metric("order")
tempcompass_attribute_change = dimension_metric("attribute_change")


def tempcompass_captioning_accuracy(rows: Sequence[Row]) -> float:
    """The share of captions the judge rated right, once no judging failed."""
    return percent(judged(rows))


def tempcompass_doc_to_text_captioning(doc: Doc, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The stock prompt; without the stock judge's key this fails here, before generation."""
    from lmms_eval.tasks.tempcompass import utils as stock

    if os.getenv("API_TYPE", "openai") == "openai" and not os.getenv("OPENAI_API_KEY"):
        raise ConfigError(f"TempCompass captioning item {doc.get('evr1_id')!r} needs the stock LLM judge: set OPENAI_API_KEY (and OPENAI_API_URL)")
    return stock.tempcompass_doc_to_text_captioning(doc, lmms_eval_specific_kwargs)


def tempcompass_process_results_captioning(doc: Doc, results: Sequence[Any]) -> dict[str, Row]:
    """captioning: the stock judge (gpt-3.5 at OPENAI_API_URL) rates the caption; an empty one is wrong
    unjudged; a judge failure (rating -1) is kept and raised by the aggregations (`judged`)."""
    from lmms_eval.tasks.tempcompass import utils as stock

    item: Row = {"id": doc["evr1_id"], "response": response_of(results), "rating": 0, "meta": doc["evr1_record"]["meta"]}
    if item["response"].strip():
        judged_item = stock.tempcompass_process_results_captioning(doc, [item["response"]])["avg_accuracy"]
        item = {**judged_item, **item, "rating": judged_item["rating"]}
    return tempcompass_metrics({**item, "score": float(item["rating"] == 1)})


# -- MMVU: evr1's scoring, the official judge step for the official block (judge checked before generation) -------


def mmvu_doc_to_text(doc: Doc, lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> str:
    """The stock prompt; an open-ended question fails here, before generation, when no judge is set."""
    from lmms_eval.tasks.mmvu import utils as stock

    scoring.judge_spec(scoring.benchmark_of(doc["evr1_benchmark"]), [doc["evr1_record"]["problem_type"]])
    return stock.mmvu_doc_to_text(doc, lmms_eval_specific_kwargs)


mmvu_process_results = official_results("accuracy")


# -- Video-MMMU: no id parsing, empty answers stay in the denominator ----------------------------


video_mmmu_process_results = official_results("mmmu_acc")


# -- VideoMathQA ----------------------------------------------------------------------------------


videomathqa_process_results = official_results("videomathqa_perception_score")


# The official block's MBin (a question right only when all its binary pairs are) and MCQ accuracy.
videomathqa_mbin = named_metric("MBin")
videomathqa_mcq = named_metric("MCQ")


# -- VSI-Bench: MRA for numbers, the official rule (`BENCHMARKS.get("vsibench").aggregate`) -----------


def vsibench_process_results(doc: Doc, results: Sequence[Any]) -> dict[str, Row]:
    """The item under the overall metric and its task's (`meta.task`: object_rel_direction for all three levels)."""
    item = item_row(doc, results)
    kind = "mra" if item["problem_type"] == "regression" else "accuracy"
    return {"vsibench_overall": item, f"{item['meta']['task']}_{kind}": item}


# -- Charades-STA: mIoU and R@IoU of the official block (the stock reader, repeated queries once) --


charades_process_results = official_results("charades_sta_IOU@3", "charades_sta_IOU@5", "charades_sta_IOU@7",
                                            "charades_sta_mIOU")


# The benchmark's official rule (`agg.grounding()`); module attributes, as the template names them.
charades_miou = named_metric("mIoU")
charades_r03 = named_metric("R@0.3")
charades_r05 = named_metric("R@0.5")
charades_r07 = named_metric("R@0.7")


# -- OVO-Bench: one request per probe, macro over tasks, no files written ------------------------


ovobench_process_results = official_results("ovobench_score")


class TaskMean(float):
    """A mean over tasks that knows how many tasks it averages (`tasks`): a plain float to lmms-eval's tables and
    JSON, and a weight to `ovobench_total`."""

    tasks: int

    def __new__(cls, value: float, tasks: int) -> Self:
        mean = super().__new__(cls, value)
        mean.tasks = tasks
        return mean

    def __getnewargs__(self) -> tuple[float, int]:  # type: ignore[override]  # copy and pickle keep `tasks`
        return float(self), self.tasks


def ovobench_category_score(rows: Sequence[Row]) -> TaskMean:
    """The official block of one category's rows: the mean over its tasks (EPM, ASI, ...) of each task's accuracy,
    answers read by the official rules; it carries its number of tasks for the group (`ovobench_total`)."""
    block = scoring.official(scoring.benchmark_of(rows[0]["benchmark"]), rows)
    return TaskMean(block["score"], len(block["breakdowns"]["task"]))


def ovobench_total(scores: Sequence[float], sizes: Sequence[int], weight_by_size: bool) -> float:
    """The group's official "Total Avg.", the mean over all the tasks of the three categories: their means weighted
    by their numbers of tasks (an lmms-eval group aggregation; the sample counts `sizes` and `weight_by_size` are not
    what the official script weighs by, so they are unused)."""
    del sizes, weight_by_size
    plain = [s for s in scores if not isinstance(s, TaskMean)]
    if plain:
        raise Evr1Error(f"OVO-Bench group: a category score without its task count ({plain[0]!r}): the group needs"
                        " its categories aggregated by ovobench_category_score")
    total = sum(s.tasks for s in scores)  # type: ignore[attr-defined]
    return sum(s * s.tasks for s in scores) / total if total else 0.0  # type: ignore[attr-defined]
