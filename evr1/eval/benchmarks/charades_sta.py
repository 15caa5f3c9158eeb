"""Charades-STA: temporal grounding of a sentence ([start, end] in seconds; mIoU and R@IoU 0.3/0.5/0.7).

The official scorer is lmms-eval 0.7.3's task (its span reader, its IoU, repeated queries counted once).
Charades-STA's official span reader: how lmms-eval 0.7.3's task (`tasks/charades_sta/utils.py`, `extract_time`)
reads a predicted span, restated (not its code):

1. The text is lower-cased; every copy of the sentence "a specific example is : 20.8 - 30.0 seconds" is cut out;
   then every "to", inside words too ("tomato", "stops"), becomes "-" (so "from 8 to 11" reads "from 8 - 11").
2. The sentences are the pieces between "!", "?" and line breaks (a full stop ends none). The candidates are the
   sentences holding "start", "end" or "happen" anywhere ("weekend" counts); all of them when none does.
3. The first of these readings that finds something gives the span:
   a. clock range: the first "m:ss - m:ss" (or h:mm:ss; a hyphen or an en dash, spaces around it optional, each
      clock a whole token) of the first candidate holding one;
   b. number range: the first "x - y" (numbers with optional decimals, not whole tokens: "-2 - 4" reads 2 - 4) of the
      first candidate holding one;
   c. clock times: the first two whole-token clock times across the candidates;
   d. numbers: the first whole-token number of each candidate, the first two of those (so two numbers in one
      sentence give one, "[8, 11]" reads only 8, and one number alone gives nothing);
   e. number range with "s": as b, with an "s" allowed between the first number and the dash ("8s - 11s").
4. The span is that pair, smaller value first; None when nothing was found (the task scores it 0, a bad prediction).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate, Aggregator
from evr1.eval.annotation_rows import plain, video
from evr1.eval.definition import Benchmark, Records, RowContext, easyvideor1_record
from evr1.eval.lmms.doc_fields import official_fields, video_name
from evr1.eval.lmms.scoring import named_metric, official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import visible
from evr1.problem_types import ProblemType as PT
from evr1.rewards.grounding_parse import parse_interval

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


def charades_question(caption: str) -> str:
    """The grounding question of a Charades-STA sentence."""
    return f'Find the moment in the video that matches: "{caption.strip()}"'


def charades_sta(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    start, end = (float(t) for t in row["timestamp"])
    rid = row.get("id", f"{PurePath(row['video']).stem}/{ctx.item}")
    question = charades_question(str(row["caption"]))
    meta = {"duration": row.get("duration"), "video": str(row["video"]), "caption": str(row["caption"])}
    return [plain(rid, question, "temporal_grounding", {"time": [start, end]}, [video(ctx, row["video"])], **meta)]


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


_THINK_JSON = re.compile(r"<think>\s*(\{.*\})\s*</think>", re.DOTALL)


def charades_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """EasyVideoR1's charades_sta.json: the sentence is the `problem` (asked as the official importer asks it);
    the span is JSON inside `<think>` when the solution has no `<answer>` (as every row of that file)."""
    solution = str(row.get("solution", ""))
    found = _THINK_JSON.search(solution) if "<answer>" not in solution else None
    row_caption = str(row.get("problem", ""))
    row = {**row, "problem": charades_question(row_caption)}
    if found:
        row["solution"] = f"<answer>{found.group(1)}</answer>"
    record = easyvideor1_record(row, ctx)
    record["answer"] = {"time": record["answer"]["time"]}  # EasyVideoR1 adds an empty "boxes"
    record["meta"].setdefault("video", str(record["media"][0]["path"]))  # the official merge of repeated queries
    record["meta"].setdefault("caption", str(row_caption))
    return [record]


# -- official scorer ---------------------------------------------------------------------------------------------------


def grounding(thresholds: Sequence[float] = (0.3, 0.5, 0.7)) -> Aggregator:
    """Temporal grounding (Charades-STA): mIoU and recall at IoU thresholds (the score is the IoU)."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        ious = [float(r["score"]) for r in rows]
        metrics = {"mIoU": agg.pct(ious)}
        for t in thresholds:
            metrics[f"R@{t:g}"] = agg.pct(1.0 if iou >= t else 0.0 for iou in ious)
        return Aggregate(metrics["mIoU"], metrics)

    return aggregate


EXAMPLE = "a specific example is : 20.8 - 30.0 seconds"  # the sentence cut out before reading
KEYWORDS = ("start", "end", "happen")  # the task's eight keywords all hold one of these
_DASH = r"\s*[-–]\s*"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2})?"  # m:ss or h:mm:ss; the first field one or two digits
_NUM = r"\d+(?:\.\d+)?"
_CLOCK_RANGE = re.compile(rf"\b({_CLOCK}){_DASH}({_CLOCK})\b")
_NUMBER_RANGE = re.compile(rf"({_NUM}){_DASH}({_NUM})")
_CLOCK_TIME = re.compile(rf"\b({_CLOCK})\b")
_NUMBER = re.compile(rf"\b({_NUM})\b")
_SECONDS_RANGE = re.compile(rf"({_NUM})\s*s?{_DASH}({_NUM})")
Span = tuple[float, float]


def clock_seconds(clock: str) -> float:
    """Seconds of "m:ss" or "h:mm:ss"."""
    fields = [float(f) for f in clock.split(":")]
    return sum(value * 60 ** power for power, value in enumerate(reversed(fields)))


def candidates(text: str) -> list[str]:
    """The sentences the task reads (rules 1 and 2)."""
    sentences = re.split(r"[!?\n]", text.lower().replace(EXAMPLE, "").replace("to", "-"))
    named = [s for s in sentences if any(k in s for k in KEYWORDS)]
    return named or sentences


def first_range(pattern: re.Pattern[str], sentences: list[str], clocks: bool) -> Span | None:
    """The first match of a two-value `pattern` in the first sentence holding one (readings a, b and e)."""
    for sentence in sentences:
        found = pattern.search(sentence)
        if found:
            read = clock_seconds if clocks else float
            return read(found.group(1)), read(found.group(2))
    return None


def first_two(values: list[float]) -> Span | None:
    return (values[0], values[1]) if len(values) >= 2 else None


def charades_span(text: str) -> Span | None:
    """The span Charades-STA's official reader takes from a response (see the module docstring), or None."""
    sentences = candidates(text)
    span = (first_range(_CLOCK_RANGE, sentences, clocks=True) or first_range(_NUMBER_RANGE, sentences, clocks=False)
            or first_two([clock_seconds(c) for s in sentences for c in _CLOCK_TIME.findall(s)])
            or first_two([float(m.group(1)) for m in map(_NUMBER.search, sentences) if m])
            or first_range(_SECONDS_RANGE, sentences, clocks=False))
    return None if span is None else (min(span), max(span))


def span_iou(pred: tuple[float, float] | None, truth: tuple[float, float]) -> float:
    """The task's IoU of a predicted span (ordered, not clipped to the clip) with the reference span as given: the
    overlap, min of the ends - max of the starts (at least 0), over the extent, max of the ends - min of the starts;
    0 when the extent is not positive (two equal points too) and for no span."""
    if pred is None:
        return 0.0
    start, end = min(pred), max(pred)
    extent = max(end, truth[1]) - min(start, truth[0])
    return 0.0 if extent <= 0 else max(0.0, min(end, truth[1]) - max(start, truth[0])) / extent


def charades_item(row: Row) -> float:
    """The IoU with the reference span (as given) of the span the task's own reader takes from the whole response
    (`charades_span`; none read: 0)."""
    truth = parse_interval(row["answer"])
    if truth is None:
        raise ValueError(f"record {row.get('id')!r}: answer {row['answer']!r} holds no span")
    return span_iou(charades_span(visible(row)), truth)


def one_per_query(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Charades-STA's merge of repeated queries: lmms-eval's task keys each prediction by video, sentence and reference
    span, so items sharing all three count once, with the last one's prediction (rows without the `video` and `caption`
    meta are kept apart)."""
    last: dict[Any, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        meta = row.get("meta") or {}
        key = ((meta["video"], meta["caption"], json.dumps(row.get("answer"), sort_keys=True))
               if "video" in meta and "caption" in meta else i)
        last[key] = row
    return list(last.values())


CHARADES = Official(
    "mIoU and R@IoU 0.3/0.5/0.7 (IoU >= R) of the predicted span as given (not clipped to the clip length); a query"
    " repeated on one video with one span counts once",
    grounding(), charades_item,
    source="lmms-eval 0.7.3 tasks/charades_sta/utils.py (extract_time's span, swapped when reversed; its iou;"
           " predictions keyed by video, caption and timestamp)",
    counted=one_per_query,
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    raw = official_fields(row)
    start, end = record.answer["time"]
    return {"video": video_name(record), "caption": str(raw.get("caption", record.problem)),
            "timestamp": [float(start), float(end)]}


charades_process_results = official_results("charades_sta_IOU@3", "charades_sta_IOU@5", "charades_sta_IOU@7",
                                            "charades_sta_mIOU")


# The benchmark's official rule (`grounding()`); module attributes, as the template names them.
charades_miou = named_metric("mIoU")
charades_r03 = named_metric("R@0.3")
charades_r05 = named_metric("R@0.5")
charades_r07 = named_metric("R@0.7")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"charades_test.json": [
    {"id": "c1", "video": "ch1.mp4", "caption": "a person opens a door", "timestamp": [1.0, 3.0]},
    {"id": "c2", "video": "ch1.mp4", "caption": "a person sits down", "timestamp": [0.0, 2.0]},
    {"id": "c3", "video": "ch1.mp4", "caption": "a person laughs", "timestamp": [2.0, 4.0]},
]}


BENCHMARK = Benchmark(
    name="charades_sta",
    title="Charades-STA",
    folder="charades_sta",
    annotations=("charades_test.json",),
    media_dir="videos",
    question_types=(PT.TEMPORAL_GROUNDING,),
    metric="mIoU and R@IoU 0.3/0.5/0.7",
    aggregate=grounding(),
    importer=charades_sta,
    lmms_task="temporal_grounding_charades",
    easyvideor1=charades_easyvideor1,
    official=CHARADES,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
