"""Synthetic datasets: small videos and images with questions and exact answers of every problem type.

`generate(out, ...)` writes `train.jsonl` and `val.jsonl` in `out` with media under
`out/media/<split>/` (paths in the records are relative to `out`, the data root). Every record
carries a correct `offline_response` (`<answer>…</answer>`). Deterministic under `seed`: the same
arguments give byte-identical record files and media.

`quickstart_dataset` is the task family of the quickstart: "what colour is the moving shape /
the square?" on tiny media, four balanced answers, so only a model that looks scores above 25%.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evr1.data.records import MediaRef, Record, write_records
from evr1.data.synth_render import BACKGROUND, Canvas, write_png, write_video
from evr1.data.synth_tasks import TASKS, Item
from evr1.errors import Evr1Error, known_list, suggest

TASK_GROUPS: dict[str, tuple[str, ...]] = {"all": tuple(TASKS), "quickstart": ("color", "color_image")}
QUICKSTART_CANVAS = Canvas(width=56, height=56, fps=4.0, frames=4)
DEFAULT_CANVAS = Canvas()
_SPLITS = {"train": 0, "val": 1}


@dataclass(frozen=True)
class SynthResult:
    """Where a generated dataset lies and how many records each split has."""

    root: Path
    train: Path
    val: Path
    counts: dict[str, int]


def resolve_tasks(names: Sequence[str]) -> tuple[str, ...]:
    """Task names with groups (`all`, `quickstart`) expanded, in order, without repeats."""
    out: list[str] = []
    for name in names:
        if name in TASK_GROUPS:
            out.extend(TASK_GROUPS[name])
        elif name in TASKS:
            out.append(name)
        else:
            known = [*TASK_GROUPS, *TASKS]
            raise Evr1Error(f"unknown synthetic task {name!r}.{suggest(name, known)} Known: {known_list(known)}")
    if not out:
        raise Evr1Error("no synthetic tasks selected")
    return tuple(dict.fromkeys(out))


def answer_text(answer: Any) -> str:
    """An answer as it appears inside `<answer>` tags (JSON for structured answers)."""
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, separators=(", ", ": "))


def _media_info(media: np.ndarray | list[np.ndarray], canvas: Canvas) -> dict[str, Any]:
    if isinstance(media, list):
        height, width = media[0].shape[:2]
        return {"width": width, "height": height, "fps": canvas.fps, "frames": len(media), "duration": canvas.duration}
    height, width = media.shape[:2]
    return {"width": width, "height": height}


def _write_media(media: np.ndarray | list[np.ndarray], path: Path, canvas: Canvas, blank: bool) -> None:
    if isinstance(media, list):
        frames = [np.full_like(f, BACKGROUND) for f in media] if blank else media
        write_video(frames, path, canvas.fps)
    else:
        write_png(np.full_like(media, BACKGROUND) if blank else media, path)


def make_record(out: Path, split: str, index: int, tasks: tuple[str, ...], seed: int, canvas: Canvas, blank: bool) -> Record:
    """Record `index` of `split`: its task, media and answer depend only on these arguments."""
    task = tasks[index % len(tasks)]
    rng = np.random.default_rng([seed, _SPLITS[split], index])
    item: Item = TASKS[task](rng, index // len(tasks), canvas)
    rid = f"{split}-{index:05d}-{task}"
    refs = []
    for j, media in enumerate(item.media):
        kind = "video" if isinstance(media, list) else "image"
        rel = f"media/{split}/{rid}{f'-{j}' if j else ''}.{'mp4' if kind == 'video' else 'png'}"
        _write_media(media, out / rel, canvas, blank)
        refs.append(MediaRef(kind=kind, path=rel))
    meta = {"task": task, "synth_seed": seed, **_media_info(item.media[0], canvas), **item.meta}
    if blank:
        meta["blank"] = True
    return Record(
        id=rid, problem=item.problem, problem_type=item.problem_type, answer=item.answer, options=item.options,
        media=refs, meta=meta, offline_response=f"<answer>{item.response or answer_text(item.answer)}</answer>",
    )


def generate(
    out: str | Path,
    *,
    tasks: Sequence[str] = ("all",),
    n_train: int = 150,
    n_val: int = 30,
    seed: int = 0,
    canvas: Canvas = DEFAULT_CANVAS,
    blank: bool = False,
) -> SynthResult:
    """Write a synthetic dataset under `out`; records cycle through `tasks`, then are shuffled by `seed`.

    `blank=True` writes the same records with empty media (background only): a control showing
    whether a model uses the pixels.
    """
    if seed < 0 or n_train < 0 or n_val < 0:
        raise Evr1Error(f"seed and counts must be >= 0 (seed {seed}, train {n_train}, val {n_val})")
    root, names = Path(out), resolve_tasks(tasks)
    counts: dict[str, int] = {}
    for split, n in (("train", n_train), ("val", n_val)):
        records = [make_record(root, split, i, names, seed, canvas, blank) for i in range(n)]
        order = np.random.default_rng([seed, _SPLITS[split], 2**31]).permutation(n)
        counts[split] = write_records((records[int(i)] for i in order), root / f"{split}.jsonl")
    return SynthResult(root, root / "train.jsonl", root / "val.jsonl", counts)


def quickstart_dataset(
    out: str | Path, n_train: int = 256, n_val: int = 64, seed: int = 0, *, canvas: Canvas = QUICKSTART_CANVAS, blank: bool = False
) -> SynthResult:
    """The quickstart data: colour questions on tiny videos and images, answers balanced over A-D."""
    return generate(out, tasks=TASK_GROUPS["quickstart"], n_train=n_train, n_val=n_val, seed=seed, canvas=canvas, blank=blank)
