"""The synthetic task families: each draws media and asks a question with an exact answer.

A task is `fn(rng, slot, canvas) -> Item`. `slot` is the record's index among the records of
that task in its split: tasks with a closed answer set cycle through it by slot, so answers are
balanced and no constant answer beats chance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from evr1.data.synth_render import COLORS, SHAPE_KINDS, Canvas, Shape, Text, render, render_clip, text_width
from evr1.problem_types import ProblemType as PT

COLOR_NAMES = tuple(COLORS)
LETTERS = "ABCDEFGHIJ"
DIRECTIONS = ("left", "right", "up", "down")
_STEP = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}
_FROM_TO = {"left": "from right to left", "right": "from left to right", "up": "from bottom to top", "down": "from top to bottom"}
WORDS = (
    "APPLE", "RIVER", "CLOUD", "TIGER", "PIANO", "LEMON", "ROBOT", "OCEAN", "CANDLE", "FOREST",
    "PLANET", "BRIDGE", "GARDEN", "WINDOW", "ROCKET", "CASTLE", "MARKET", "PENCIL", "SUMMER", "VIOLIN",
)
Media = np.ndarray | list[np.ndarray]  # an image (H, W, 3) or a clip (frames of H, W, 3)
T = TypeVar("T")


@dataclass
class Item:
    """What a task produces: the question, its exact answer and the media to write."""

    problem: str
    problem_type: PT
    answer: Any
    media: list[Media]
    options: list[str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    response: str | None = None  # the offline answer text, when it is not the answer itself


def _pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    return items[int(rng.integers(len(items)))]


def _other(rng: np.random.Generator, items: Sequence[T], *exclude: T) -> T:
    return _pick(rng, [i for i in items if i not in exclude])


def _ts(seconds: float) -> str:
    """A timestamp key of a box track: seconds in shortest form ("0", "0.25", "1.5")."""
    return format(seconds, "g")


def _moving(
    rng: np.random.Generator, canvas: Canvas, kind: str, color: str, way: str, *, sizes: tuple[int, int] | None = None,
    **extra: Any,
) -> Shape:
    """A shape moving in direction `way` that stays inside the canvas in every frame.

    `sizes`: the smallest and largest side (default a quarter to a third of the canvas height).
    """
    dx, dy = _STEP[way]
    smallest, largest = sizes or (canvas.height // 4, canvas.height // 3)
    size = int(rng.integers(smallest, largest + 1))
    span = (canvas.width if dx else canvas.height) - size
    top_speed = max(1, span // (canvas.frames - 1))
    speed = int(rng.integers(max(1, top_speed // 2), top_speed + 1))
    travel = speed * (canvas.frames - 1)
    x = int(rng.integers(0, canvas.width - size - (travel if dx else 0) + 1))
    y = int(rng.integers(0, canvas.height - size - (travel if dy else 0) + 1))
    if dx < 0:
        x += travel
    if dy < 0:
        y += travel
    return Shape(kind, color, size, x, y, vx=dx * speed, vy=dy * speed, **extra)  # type: ignore[arg-type]


def _static(
    rng: np.random.Generator, canvas: Canvas, kind: str, color: str, largest: int, *, smallest: int | None = None,
    **extra: Any,
) -> Shape:
    """A still shape of a random size from `smallest` (default a quarter of the canvas height) to `largest`."""
    size = int(rng.integers(canvas.height // 4 if smallest is None else smallest, largest + 1))
    x, y = (int(rng.integers(0, side - size + 1)) for side in (canvas.width, canvas.height))
    return Shape(kind, color, size, x, y, **extra)  # type: ignore[arg-type]


def _scattered(rng: np.random.Generator, width: int, height: int, specs: Sequence[tuple[str, str]]) -> list[Shape]:
    """Static shapes (kind, colour) in distinct cells of a 4x4 grid, at least 2 px apart."""
    cw, ch = width // 4, height // 4
    cells = rng.permutation(16)[: len(specs)]
    shapes = []
    for (kind, color), cell in zip(specs, cells, strict=True):
        size = int(rng.integers(max(4, min(cw, ch) // 2), min(cw, ch) - 1))
        col, row = divmod(int(cell), 4)
        x = col * cw + 1 + int(rng.integers(0, cw - size - 1))
        y = row * ch + 1 + int(rng.integers(0, ch - size - 1))
        shapes.append(Shape(kind, color, size, x, y))  # type: ignore[arg-type]
    return shapes


def _large(canvas: Canvas) -> tuple[int, int]:
    """Side range of the colour tasks' shapes: half to 70% of the canvas height.

    Large on purpose: these are the quickstart's tasks. The tiny random-init model learns the colour
    in about 100 GRPO steps when the shape covers whole merged visual tokens (2x2 patches of 14 px
    on the 56 px canvas); with 14-18 px shapes it stayed at chance for 800 steps.
    """
    return canvas.height // 2, canvas.height * 7 // 10


def color(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    name = COLOR_NAMES[slot % len(COLOR_NAMES)]
    shape = _moving(rng, canvas, _pick(rng, SHAPE_KINDS), name, _pick(rng, DIRECTIONS), sizes=_large(canvas))
    return Item("What colour is the moving shape?", PT.MULTIPLE_CHOICE, LETTERS[slot % len(COLOR_NAMES)],
                [render_clip([shape], canvas)], options=list(COLOR_NAMES), meta={"color": name})


def color_image(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    name = COLOR_NAMES[slot % len(COLOR_NAMES)]
    smallest, largest = _large(canvas)
    square = _static(rng, canvas, "square", name, largest, smallest=smallest)
    image = render([square], canvas.width, canvas.height)
    return Item("What colour is the square?", PT.MULTIPLE_CHOICE, LETTERS[slot % len(COLOR_NAMES)], [image],
                options=list(COLOR_NAMES), meta={"color": name, "box": square.box()})


def direction(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    way = DIRECTIONS[slot % len(DIRECTIONS)]
    kind, name = _pick(rng, SHAPE_KINDS), _pick(rng, COLOR_NAMES)
    shape = _moving(rng, canvas, kind, name, way)
    return Item(f"In which direction does the {name} {kind} move?", PT.MULTIPLE_CHOICE,
                LETTERS[DIRECTIONS.index(way)], [render_clip([shape], canvas)], options=list(DIRECTIONS))


def count(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    n = 1 + slot % 5
    specs = [("circle", _pick(rng, COLOR_NAMES)) for _ in range(n)]
    specs += [(_pick(rng, ("square", "triangle")), _pick(rng, COLOR_NAMES)) for _ in range(int(rng.integers(0, 3)))]
    image = render(_scattered(rng, canvas.width, canvas.height, specs), canvas.width, canvas.height)
    return Item("How many circles are in the image?", PT.NUMERICAL, n, [image])


def travel(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    shape = _moving(rng, canvas, "square", _pick(rng, COLOR_NAMES), "right")
    distance = shape.vx * (canvas.frames - 1)
    return Item("How many pixels does the square move to the right between the first and the last frame?",
                PT.REGRESSION, distance, [render_clip([shape], canvas)], meta={"unit": "px"})


def _event(rng: np.random.Generator, canvas: Canvas, moving: bool) -> tuple[Shape, Shape, int, int]:
    """A target shape visible in frames first..last (at least 2 frames), and a distractor always visible."""
    first = int(rng.integers(0, canvas.frames - 1))
    last = int(rng.integers(first + 1, canvas.frames))
    kind, name = _pick(rng, SHAPE_KINDS), _pick(rng, COLOR_NAMES)
    if moving:
        target = _moving(rng, canvas, kind, name, _pick(rng, DIRECTIONS), first=first, last=last)
    else:
        target = _static(rng, canvas, kind, name, canvas.height // 3, first=first, last=last)
    distractor = _moving(rng, canvas, _other(rng, SHAPE_KINDS, kind), _other(rng, COLOR_NAMES, name), _pick(rng, DIRECTIONS))
    return target, distractor, first, last


def appear(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    target, distractor, first, last = _event(rng, canvas, moving=False)
    answer = {"time": [canvas.time(first), canvas.time(last + 1)]}
    return Item(f"During which time interval is the {target.color} {target.kind} visible? Give the start and end time in seconds.",
                PT.TEMPORAL_GROUNDING, answer, [render_clip([distractor, target], canvas)])


def locate(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    names = rng.permutation(len(COLOR_NAMES))[: 2 + slot % 2]
    specs = [(_pick(rng, SHAPE_KINDS), COLOR_NAMES[int(i)]) for i in names]
    shapes = _scattered(rng, canvas.width, canvas.height, specs)
    target = shapes[int(rng.integers(len(shapes)))]
    return Item(f"Where is the {target.color} {target.kind}? Give its bounding box [x1, y1, x2, y2].",
                PT.SPATIAL_GROUNDING, {"boxes": target.box()}, [render(shapes, canvas.width, canvas.height)],
                meta={"width": canvas.width, "height": canvas.height})


def when_where(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    target, distractor, first, last = _event(rng, canvas, moving=True)
    answer = {
        "time": [canvas.time(first), canvas.time(last + 1)],
        "boxes": {_ts(canvas.time(f)): target.box(f) for f in range(first, last + 1)},
    }
    return Item(f"When is the {target.color} {target.kind} visible, and where is it at each moment? "
                "Give the time interval in seconds and its bounding box [x1, y1, x2, y2] per timestamp.",
                PT.SPATIAL_TEMPORAL_GROUNDING, answer, [render_clip([distractor, target], canvas)])


def track(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    kind, name = _pick(rng, SHAPE_KINDS), _pick(rng, COLOR_NAMES)
    target = _moving(rng, canvas, kind, name, _pick(rng, DIRECTIONS))
    distractor = _moving(rng, canvas, _other(rng, SHAPE_KINDS, kind), _other(rng, COLOR_NAMES, name), _pick(rng, DIRECTIONS))
    answer = {"boxes": {_ts(canvas.time(f)): target.box(f) for f in range(canvas.frames)}}
    return Item(f"Track the {name} {kind}: give its bounding box [x1, y1, x2, y2] at each timestamp in seconds.",
                PT.TRACKING, answer, [render_clip([distractor, target], canvas)])


def _description(kind: str, color: str, way: str) -> str:
    return f"a {color} {kind} moves {_FROM_TO[way]}"


def describe(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    way = _pick(rng, DIRECTIONS)
    shape = _moving(rng, canvas, _pick(rng, SHAPE_KINDS), _pick(rng, COLOR_NAMES), way)
    return Item("Describe what happens in the video in one sentence.", PT.OPEN_ENDED, _description(shape.kind, shape.color, way),
                [render_clip([shape], canvas)])


def _combine(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a - b if op == "-" else a * b


def arith(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    a, b, c = (int(v) for v in rng.integers(1, 10, size=3))
    op1, op2 = _pick(rng, "+-*"), _pick(rng, "+-*")
    value = _combine(a, op1, _combine(b, op2, c)) if op2 == "*" and op1 != "*" else _combine(_combine(a, op1, b), op2, c)
    expression = f"{a} {op1} {b} {op2} {c}"
    width, size = max(canvas.width, 96), 16
    text = Text(expression, (width - text_width(expression, size)) // 2, (canvas.height - size) // 2, size)
    return Item("What is the value of the expression shown in the image?", PT.MATH, str(value),
                [render([], width, canvas.height, texts=[text])], meta={"expression": expression})


def read_text(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    word = _pick(rng, WORDS)
    size = canvas.height // 4
    while size > 8 and text_width(word, size) > canvas.width - 4:
        size -= 1
    text = Text(word, (canvas.width - text_width(word, size)) // 2, 2, size)
    shape = _moving(rng, canvas, _pick(rng, SHAPE_KINDS), _pick(rng, COLOR_NAMES), _pick(rng, ("left", "right")))
    shape = Shape(shape.kind, shape.color, shape.size, shape.x, canvas.height - shape.size, vx=shape.vx)
    return Item("What word is written in the video?", PT.OCR, word, [render_clip([shape], canvas, [text])])


def change(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    changes = slot % 2 == 0
    kind, name = _pick(rng, SHAPE_KINDS), _pick(rng, COLOR_NAMES)
    extra = {"new_color": _other(rng, COLOR_NAMES, name), "change_at": int(rng.integers(1, canvas.frames))} if changes else {}
    shape = _moving(rng, canvas, kind, name, _pick(rng, DIRECTIONS), **extra)
    return Item(f"Does the {kind} change colour during the video?", PT.BOOLEAN, "yes" if changes else "no",
                [render_clip([shape], canvas)], meta={"change_time": canvas.time(extra["change_at"])} if changes else {})


def code(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    n = 1 + slot % 5
    specs = [("square", _pick(rng, COLOR_NAMES)) for _ in range(n)]
    specs += [("circle", _pick(rng, COLOR_NAMES)) for _ in range(int(rng.integers(0, 3)))]
    image = render(_scattered(rng, canvas.width, canvas.height, specs), canvas.width, canvas.height)
    tests = [f"assert f({x}) == {n * x}" for x in (1, 2, 7)]
    return Item("Write a Python function f(x) that returns x multiplied by the number of squares in the image.",
                PT.CODE, {"language": "python", "tests": tests}, [image],
                response=f"```python\ndef f(x):\n    return {n} * x\n```")


def judge(rng: np.random.Generator, slot: int, canvas: Canvas) -> Item:
    way = _pick(rng, DIRECTIONS)
    shape = _moving(rng, canvas, _pick(rng, SHAPE_KINDS), _pick(rng, COLOR_NAMES), way)
    right = _description(shape.kind, shape.color, way)
    if rng.integers(2):
        wrong = _description(shape.kind, _other(rng, COLOR_NAMES, shape.color), way)
    else:
        wrong = _description(shape.kind, shape.color, _other(rng, DIRECTIONS, way))
    first, second, label = (right, wrong, "A") if slot % 2 == 0 else (wrong, right, "B")
    problem = f"Which response describes the video correctly?\nResponse A: {first}.\nResponse B: {second}."
    return Item(problem, PT.PREFERENCE, label, [render_clip([shape], canvas)])


TaskFn = Callable[[np.random.Generator, int, Canvas], Item]
TASKS: dict[str, TaskFn] = {
    fn.__name__: fn
    for fn in (color, color_image, direction, count, travel, appear, locate, when_where, track, describe,
               arith, read_text, change, code, judge)
}
