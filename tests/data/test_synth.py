"""Synthetic data: every problem type, exact answers checked against the decoded pixels, determinism."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from evr1.data.records import Record, missing_media, read_records
from evr1.data.synth import QUICKSTART_CANVAS, answer_text, generate, quickstart_dataset, resolve_tasks
from evr1.data.synth_render import BACKGROUND, COLORS, Canvas
from evr1.data.synth_tasks import DIRECTIONS, LETTERS, WORDS
from evr1.errors import Evr1Error
from evr1.problem_types import ProblemType

TARGET = re.compile(r"the (red|green|blue|yellow) (square|circle|triangle)")


def frames_of(record: Record, root: Path) -> list[np.ndarray]:
    """The decoded frames of a record's (only) medium, with PyAV / Pillow directly."""
    path = root / record.media[0].path
    if record.media[0].kind == "image":
        return [np.asarray(Image.open(path).convert("RGB"))]
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def color_mask(frame: np.ndarray, name: str, tolerance: float = 70.0) -> np.ndarray:
    return np.linalg.norm(frame.astype(float) - COLORS[name], axis=-1) < tolerance


def bbox(mask: np.ndarray) -> list[int] | None:
    ys, xs = np.nonzero(mask)
    return None if xs.size == 0 else [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]


def dominant_color(frame: np.ndarray) -> str:
    counts = {name: int(color_mask(frame, name).sum()) for name in COLORS}
    return max(counts, key=counts.__getitem__)


def blobs(mask: np.ndarray) -> list[np.ndarray]:
    """4-connected components of a boolean mask, each as its own mask."""
    seen = np.zeros_like(mask)
    out = []
    for y, x in zip(*np.nonzero(mask), strict=True):
        if seen[y, x]:
            continue
        part, stack = np.zeros_like(mask), [(y, x)]
        seen[y, x] = part[y, x] = True
        while stack:
            cy, cx = stack.pop()
            for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                if 0 <= ny < mask.shape[0] and 0 <= nx < mask.shape[1] and mask[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = part[ny, nx] = True
                    stack.append((ny, nx))
        out.append(part)
    return out


def shape_of(part: np.ndarray) -> str:
    """Square, circle or triangle, by how much of its bounding box a blob fills (1, pi/4, 1/2)."""
    x1, y1, x2, y2 = bbox(part)  # type: ignore[misc]
    fill = part.sum() / ((x2 - x1) * (y2 - y1))
    return "square" if fill > 0.92 else "circle" if fill > 0.65 else "triangle"


def close(a: list[int] | None, b: list[int], tol: int = 2) -> bool:
    return a is not None and max(abs(p - q) for p, q in zip(a, b, strict=True)) <= tol


def motion(frames: list[np.ndarray], name: str) -> str:
    (ax, ay, *_), (bx, by, *_) = bbox(color_mask(frames[0], name)), bbox(color_mask(frames[-1], name))  # type: ignore[misc]
    dx, dy = bx - ax, by - ay
    return ("right" if dx > 0 else "left") if abs(dx) > abs(dy) else ("down" if dy > 0 else "up")


def describe_pixels(frames: list[np.ndarray]) -> str:
    """The reference sentence of the open-ended task, read back from the pixels."""
    name = dominant_color(frames[0])
    shape = shape_of(blobs(color_mask(frames[0], name, 40))[0])
    way = {"left": "from right to left", "right": "from left to right", "up": "from bottom to top", "down": "from top to bottom"}
    return f"a {name} {shape} moves {way[motion(frames, name)]}"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Record]]:
    root = tmp_path_factory.mktemp("synth")
    result = generate(root, n_train=60, n_val=15, seed=11)
    assert result.counts == {"train": 60, "val": 15}
    return root, list(read_records([result.train, result.val]))


def by_task(dataset: tuple[Path, list[Record]], task: str) -> list[Record]:
    found = [r for r in dataset[1] if r.meta["task"] == task]
    assert found
    return found


def test_every_problem_type_with_valid_media_and_offline_answers(dataset: tuple[Path, list[Record]]) -> None:
    root, records = dataset
    assert {r.problem_type for r in records} == set(ProblemType)
    for record in records:
        assert missing_media(record, root) == []
        frames = frames_of(record, root)
        assert frames[0].shape == (record.meta["height"], record.meta["width"], 3)
        if record.media[0].kind == "video":
            assert len(frames) == record.meta["frames"] == 8 and record.meta["duration"] == 2.0
        if record.problem_type is not ProblemType.CODE:
            assert record.offline_response == f"<answer>{answer_text(record.answer)}</answer>"


def test_same_seed_same_bytes_and_frames_other_seed_differs(tmp_path: Path) -> None:
    first, second, other = (generate(tmp_path / name, n_train=15, n_val=2, seed=seed) for name, seed in (("a", 4), ("b", 4), ("c", 5)))
    for name in ("train.jsonl", "val.jsonl"):
        assert (first.root / name).read_bytes() == (second.root / name).read_bytes()
    media = sorted(p.relative_to(first.root) for p in (first.root / "media").rglob("*.*"))
    assert len(media) == 17
    assert all((first.root / p).read_bytes() == (second.root / p).read_bytes() for p in media)
    for record_a, record_b in zip(read_records(first.train), read_records(second.train), strict=True):
        assert all(np.array_equal(a, b) for a, b in zip(frames_of(record_a, first.root), frames_of(record_b, second.root), strict=True))
    assert first.train.read_bytes() != other.train.read_bytes()


def test_colour_answers_match_the_pixels(dataset: tuple[Path, list[Record]]) -> None:
    for record in by_task(dataset, "color") + by_task(dataset, "color_image"):
        frames = frames_of(record, dataset[0])
        assert {dominant_color(f) for f in frames} == {record.options[LETTERS.index(record.answer)]}


def test_direction_answers_match_the_motion(dataset: tuple[Path, list[Record]]) -> None:
    for record in by_task(dataset, "direction"):
        name, _ = TARGET.search(record.problem).groups()
        assert motion(frames_of(record, dataset[0]), name) == DIRECTIONS[LETTERS.index(record.answer)]


def test_counts_match_the_shapes_in_the_image(dataset: tuple[Path, list[Record]]) -> None:
    for task, kind in (("count", "circle"), ("code", "square")):
        for record in by_task(dataset, task):
            [image] = frames_of(record, dataset[0])
            shapes = Counter(shape_of(part) for part in blobs(np.any(image != BACKGROUND, axis=-1)))
            expected = record.answer if task == "count" else int(record.answer["tests"][0].split("== ")[1])
            assert shapes[kind] == expected


def test_code_offline_response_passes_its_tests(dataset: tuple[Path, list[Record]]) -> None:
    for record in by_task(dataset, "code"):
        source = re.search(r"```python\n(.*)```", record.offline_response, re.DOTALL).group(1)
        scope: dict = {}
        exec(source, scope)  # noqa: S102 - our own generated solution
        for test in record.answer["tests"]:
            exec(test, scope)  # noqa: S102
        with pytest.raises(AssertionError):
            exec(record.answer["tests"][0].replace("==", "== 1 +"), scope)  # noqa: S102


def test_travel_distance_matches_the_pixels(dataset: tuple[Path, list[Record]]) -> None:
    for record in by_task(dataset, "travel"):
        frames = frames_of(record, dataset[0])
        name = dominant_color(frames[0])
        start, end = bbox(color_mask(frames[0], name)), bbox(color_mask(frames[-1], name))
        assert abs((end[0] - start[0]) - record.answer) <= 1 and record.answer > 0


def test_temporal_answers_match_when_the_shape_is_visible(dataset: tuple[Path, list[Record]]) -> None:
    for task in ("appear", "when_where"):
        for record in by_task(dataset, task):
            name, _ = TARGET.search(record.problem).groups()
            start, end = record.answer["time"]
            fps = record.meta["fps"]
            visible = [bool(color_mask(f, name).sum() > 20) for f in frames_of(record, dataset[0])]
            assert visible == [start <= i / fps < end for i in range(len(visible))]
            assert 0 <= start < end <= record.meta["duration"]


def test_boxes_match_the_pixels(dataset: tuple[Path, list[Record]]) -> None:
    for record in by_task(dataset, "locate"):
        name, _ = TARGET.search(record.problem).groups()
        [image] = frames_of(record, dataset[0])
        assert bbox(np.all(image == COLORS[name], axis=-1)) == record.answer["boxes"]  # lossless PNG: exact
    for task in ("when_where", "track"):
        for record in by_task(dataset, task):
            name, _ = TARGET.search(record.problem).groups()
            frames = frames_of(record, dataset[0])
            boxes = record.answer["boxes"]
            assert len(boxes) >= 2
            for stamp, box in boxes.items():
                frame = frames[round(float(stamp) * record.meta["fps"])]
                assert close(bbox(color_mask(frame, name)), box), (record.id, stamp)


def test_open_ended_and_preference_answers_match_the_pixels(dataset: tuple[Path, list[Record]]) -> None:
    for record in by_task(dataset, "describe"):
        assert describe_pixels(frames_of(record, dataset[0])) == record.answer
    for record in by_task(dataset, "judge"):
        truth = describe_pixels(frames_of(record, dataset[0]))
        responses = dict(re.findall(r"Response ([AB]): (.*)\.", record.problem))
        assert responses[record.answer] == truth
        assert responses["B" if record.answer == "A" else "A"] != truth


def test_boolean_change_matches_the_pixels(dataset: tuple[Path, list[Record]]) -> None:
    answers = []
    for record in by_task(dataset, "change"):
        frames = frames_of(record, dataset[0])
        changed = dominant_color(frames[0]) != dominant_color(frames[-1])
        assert record.answer == ("yes" if changed else "no")
        answers.append(record.answer)
    assert set(answers) == {"yes", "no"}


def test_math_and_ocr_answers(dataset: tuple[Path, list[Record]]) -> None:
    for record in by_task(dataset, "arith"):
        expression = record.meta["expression"]
        assert re.fullmatch(r"\d [-+*] \d [-+*] \d", expression)
        assert int(record.answer) == eval(expression)
        [image] = frames_of(record, dataset[0])
        assert np.any(image != BACKGROUND)
    for record in by_task(dataset, "read_text"):
        assert record.answer in WORDS
        top = frames_of(record, dataset[0])[0][: record.meta["height"] // 3]
        assert (top.min(axis=-1) > 200).sum() > 20  # white text drawn at the top


def test_quickstart_is_balanced_tiny_and_needs_the_pixels(tmp_path: Path) -> None:
    result = quickstart_dataset(tmp_path, n_train=64, n_val=16, seed=1)
    records = list(read_records(result.train))
    assert Counter(r.modality for r in records) == {"video": 32, "image": 32}
    for modality in ("video", "image"):
        assert Counter(r.answer for r in records if r.modality == modality) == {"A": 8, "B": 8, "C": 8, "D": 8}
    for record in records + list(read_records(result.val)):
        assert re.fullmatch(r"<answer>[ABCD]</answer>", record.offline_response)
        assert record.options == ["red", "green", "blue", "yellow"]
        frames = frames_of(record, tmp_path)
        assert frames[0].shape == (QUICKSTART_CANVAS.height, QUICKSTART_CANVAS.width, 3)
        assert len(frames) == (QUICKSTART_CANVAS.frames if record.modality == "video" else 1)
        assert dominant_color(frames[-1]) == record.options[LETTERS.index(record.answer)]


def test_blank_control_keeps_records_and_empties_media(tmp_path: Path) -> None:
    normal = quickstart_dataset(tmp_path / "normal", n_train=8, n_val=0)
    blank = quickstart_dataset(tmp_path / "blank", n_train=8, n_val=0, blank=True)
    for a, b in zip(read_records(normal.train), read_records(blank.train), strict=True):
        assert b.meta.pop("blank") is True
        assert a == b
        for frame in frames_of(b, blank.root):
            assert np.abs(frame.astype(int) - BACKGROUND).max() <= 3


def test_task_selection_and_settings_errors(tmp_path: Path) -> None:
    assert resolve_tasks(["quickstart", "color", "count"]) == ("color", "color_image", "count")
    assert len(resolve_tasks(["all"])) == 15
    with pytest.raises(Evr1Error, match="Did you mean 'count'"):
        resolve_tasks(["cont"])
    with pytest.raises(ValueError, match="even"):
        Canvas(width=63)
    with pytest.raises(ValueError, match="at least 2 frames"):
        Canvas(frames=1)
    with pytest.raises(Evr1Error, match="must be >= 0"):
        generate(tmp_path, seed=-1)


def test_other_canvas_sizes_keep_shapes_inside(tmp_path: Path) -> None:
    canvas = Canvas(width=96, height=48, fps=2.0, frames=5)
    result = generate(tmp_path, tasks=["track", "when_where", "locate"], n_train=9, n_val=0, seed=2, canvas=canvas)
    for record in read_records(result.train):
        boxes = record.answer["boxes"]
        for box in boxes.values() if isinstance(boxes, dict) else [boxes]:
            assert 0 <= box[0] < box[2] <= 96 and 0 <= box[1] < box[3] <= 48
        assert frames_of(record, tmp_path)[0].shape == (48, 96, 3)
