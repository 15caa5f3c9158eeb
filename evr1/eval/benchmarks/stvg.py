"""STVG (HC-STVG): spatio-temporal grounding: the time span and a box per second of the person described.

evr1's strict score is EasyVideoR1's 0.5 tIoU + 0.5 mean box IoU; the official one HC-STVG's m_vIoU (with
vIoU@0.3/0.5 and m_tIoU, frames at 1 fps). lmms-eval 0.7.3 has no task for it: `evals/stvg/` is evr1's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate, Aggregator
from evr1.eval.annotation_rows import plain, video
from evr1.eval.definition import Benchmark, RowContext
from evr1.eval.protocols import Official
from evr1.eval.readers import visible
from evr1.problem_types import ProblemType as PT
from evr1.rewards import extract_answer
from evr1.rewards.grounding_parse import parse_interval, parse_track

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


HCSTVG_SECONDS = 20.0  # every HC-STVG clip lasts 20 s; `img_num` = fps * 20 (the HC-STVG README)


def stvg(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """An HC-STVG (v1/v2) file: one object keyed by video file; `bbox` holds `[x, y, w, h]` for each frame from
    `st_frame` (1-based) on; one reference box per whole second of the span is kept, as `[x1, y1, x2, y2]`."""
    out = []
    for name, ann in row.items():
        fps = float(ann["img_num"]) / HCSTVG_SECONDS
        boxes: dict[str, list[float]] = {}
        for offset, (x, y, w, h) in enumerate(ann["bbox"]):
            second = (int(ann["st_frame"]) - 1 + offset) / fps
            if abs(second - round(second)) < 0.5 / fps:
                boxes[f"{round(second):g}"] = [x, y, x + w, y + h]
        answer = {"time": [float(ann["st_time"]), float(ann["ed_time"])], "boxes": boxes}
        caption = str(ann.get("caption", ann.get("English", ""))).strip()
        question = f'Find when and where this happens, and track the person: "{caption}"'
        height, width = ann["img_size"] if "img_size" in ann else (ann.get("height"), ann.get("width"))
        out.append(plain(PurePath(name).stem, question, "spatial_temporal_grounding", answer, [video(ctx, name)],
                         height=height, width=width))
    return out


# -- official scorer ---------------------------------------------------------------------------------------------------


def spatio_temporal(*keys: str) -> Aggregator:
    """STVG: mean of 0.5 tIoU + 0.5 box IoU, with the mean tIoU and box IoU reported apart."""

    def aggregate(rows: Sequence[Row]) -> Aggregate:
        comp = [r.get("components") or {} for r in rows]
        metrics = {
            "score": agg.pct(r["score"] for r in rows),
            "tIoU": agg.pct(c.get("tiou", 0.0) for c in comp),
            "box_IoU": agg.pct(c.get("viou", 0.0) for c in comp),
        }
        return Aggregate(metrics["score"], metrics, agg.breakdowns_by(rows, keys))

    return aggregate


def hcstvg_box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """eval_hcvg.py's box IoU: 0 unless the boxes overlap with a positive width and height, else the intersection
    over the two areas' sum less it (boxes as given, nothing clamped)."""
    x1, y1, x2, y2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    if x1 >= x2 or y1 >= y2:
        return 0.0
    inter = (x2 - x1) * (y2 - y1)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def hcstvg_tube(truth: Mapping[int, Sequence[float]], truth_span: tuple[int, int], boxes: Mapping[int, Sequence[float]],
                span: tuple[int, int]) -> tuple[float, float]:
    """`(vIoU, tIoU)` as eval_hcvg.py computes them: the reference frames holding a predicted box (wherever the
    predicted span lies) give the IoU sum (vIoU) and their count (tIoU), each over the frames from the earlier first
    to the later last frame of the two spans, `max(ends) - min(starts) + 1` (a gap between them included)."""
    shared = [f for f in truth if f in boxes]
    frames = max(truth_span[1], span[1]) - min(truth_span[0], span[0]) + 1
    return sum(hcstvg_box_iou(boxes[f], truth[f]) for f in shared) / frames, len(shared) / frames


def stvg_item(row: Row) -> dict[str, Any]:
    """HC-STVG's vIoU and tIoU (`hcstvg_tube`) at 1 fps: frames are whole seconds (the reference keeps one box per
    second, its span from its first to its last box); the prediction's span is its `time`, rounded inwards to whole
    seconds (else its first to last box), its boxes taken at their nearest second. No time and no box scores 0, as
    a video missing from the predictions."""
    truth = {round(float(t)): b for t, b in parse_track(row["answer"]).items()}
    text = extract_answer(visible(row)).text or ""
    track = parse_track(text)
    interval = parse_interval(text)
    if not truth or (interval is None and not track):
        return {"score": 0.0, "components": {"viou": 0.0, "tiou": 0.0}}
    boxes = {round(t): b for t, b in track.items()}
    span = (math.ceil(interval[0]), math.floor(interval[1])) if interval else (min(boxes), max(boxes))
    viou, tiou = hcstvg_tube(truth, (min(truth), max(truth)), boxes, span)
    return {"score": viou, "components": {"viou": viou, "tiou": tiou}}


def hcstvg(rows: Sequence[Row]) -> Aggregate:
    """m_vIoU (headline), vIoU@0.3 and vIoU@0.5 (share of items with vIoU above the threshold) and m_tIoU."""
    viou = [float(r["score"]) for r in rows]
    tiou = [float((r.get("components") or {}).get("tiou", 0.0)) for r in rows]
    pct = (lambda xs: 100.0 * sum(xs) / len(xs) if xs else 0.0)
    metrics = {"m_vIoU": pct(viou), "vIoU@0.3": pct([v > 0.3 for v in viou]), "vIoU@0.5": pct([v > 0.5 for v in viou]),
               "m_tIoU": pct(tiou)}
    return Aggregate(metrics["m_vIoU"], metrics)


STVG = Official(
    "m_vIoU, with vIoU@0.3, vIoU@0.5 and the frame-based m_tIoU (HC-STVG's metrics, frames at 1 fps)",
    hcstvg, stvg_item, source="tzhhhh123/HC-STVG eval_hcvg.py (commit 080b193, unchanged at HEAD 94ab6e9: hcvg_eval,"
                              " iou2d)",
)


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"test.json": {  # HC-STVG: img_num = fps * 20 (here 4 fps), st_frame 1-based, bbox [x, y, w, h] per frame
    "st1.mp4": {"st_frame": 5, "img_num": 80, "st_time": 1.0, "ed_time": 3.0, "width": 64, "height": 48,
                "caption": "the man walks", "bbox": [[10, 10, 20, 20]] * 9},
    "st2.mp4": {"st_frame": 1, "img_num": 80, "st_time": 0.0, "ed_time": 2.0, "width": 64, "height": 48,
                "caption": "the woman sits", "bbox": [[0, 0, 32, 24]] * 9},
}}


BENCHMARK = Benchmark(
    name="stvg",
    title="STVG",
    folder="stvg",
    annotations=("test.json",),
    media_dir="videos",
    question_types=(PT.SPATIAL_TEMPORAL_GROUNDING,),
    metric="0.5 tIoU + 0.5 mean box IoU",
    aggregate=spatio_temporal("category"),
    importer=stvg,
    official=STVG,
    fixtures=FIXTURES,
)
