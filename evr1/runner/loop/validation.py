"""The figures of one validation split: over the split, and per problem type.

`val/<split>/accuracy` is the mean of each record's `accuracy` component and `val/<split>/score` the mean score,
over every record of the split: one whose media failed to load, or that was not scored, counts 0. The same per
problem type: `val/<split>/<type>/accuracy`, `.../score` and `.../count` (its records). "Accuracy" is what the
type's reward scores (with the default routes): the share of right answers for answer types, but a mean IoU
for the grounding types, a mean relative accuracy for regression (see `ACCURACY_MEANS`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from evr1.problem_types import ProblemType

ACCURACY_MEANS: dict[ProblemType, str] = {
    ProblemType.TEMPORAL_GROUNDING: "a mean IoU (of the answer's time span with the reference's)",
    ProblemType.SPATIAL_GROUNDING: "a mean IoU (of the answer's boxes with the reference's)",
    ProblemType.SPATIAL_TEMPORAL_GROUNDING: "a mean of 0.5 x temporal IoU + 0.5 x box IoU over the track",
    ProblemType.TRACKING: "a mean IoU (of the answer's box with the reference's at each reference time)",
    ProblemType.REGRESSION: "a mean relative accuracy (VSI-Bench's MRA)",
}  # the types whose accuracy is no share of right answers: a figure of 0.5 is not "half right"


def split_metrics(split: str, records: Sequence[Any], scored: Sequence[Any], outputs: Sequence[Any]) -> dict[str, float]:
    """The figures of validation split `split` (see the module docstring): `records` are all of its records,
    `scored` those whose responses were scored, with their reward `outputs` in the same order."""
    counts = Counter(ProblemType(r.problem_type) for r in records)
    accuracy: dict[ProblemType, float] = defaultdict(float)
    score: dict[ProblemType, float] = defaultdict(float)
    for record, out in zip(scored, outputs, strict=True):
        accuracy[ProblemType(record.problem_type)] += out.components.get("accuracy", 0.0)
        score[ProblemType(record.problem_type)] += out.score
    total = len(records)
    metrics = {f"val/{split}/accuracy": sum(accuracy.values()) / total, f"val/{split}/score": sum(score.values()) / total}
    for kind in sorted(counts):
        prefix = f"val/{split}/{kind.value}"
        metrics |= {f"{prefix}/accuracy": accuracy[kind] / counts[kind], f"{prefix}/score": score[kind] / counts[kind],
                    f"{prefix}/count": float(counts[kind])}
    return metrics


def type_of_key(key: str) -> ProblemType | None:
    """The problem type of a per-type validation key (`val/<split>/<type>/<figure>`), else None."""
    parts = key.split("/")
    if len(parts) < 4 or parts[0] != "val" or parts[-2] not in {kind.value for kind in ProblemType}:
        return None
    return ProblemType(parts[-2])


def accuracy_notes(keys: Sequence[str]) -> list[str]:
    """What "accuracy" means for each problem type among the accuracy `keys` (training `reward/<type>/accuracy`,
    validation `val/<split>/<type>/accuracy`) whose accuracy is no share of right answers (`ACCURACY_MEANS`)."""
    types = {key.split("/")[-2] for key in keys if key.startswith(("reward/", "val/")) and key.endswith("/accuracy")}
    found = sorted(kind for kind in ACCURACY_MEANS if kind.value in types)
    return [f"For {kind.value}, accuracy is {ACCURACY_MEANS[kind]}." for kind in found]
