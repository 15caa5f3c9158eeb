"""The batch contract of rewards: `RewardInput`, `RewardOutput` and the `per_sample` decorator.

A reward is a callable `fn(inputs, spec)` over a batch of `RewardInput`s that returns one value per
input: a float in [0, 1] (the accuracy), a `RewardOutput` (accuracy plus named components), `None`
("does not apply to this sample") or an `Exception` instance (this sample failed). It may be an
`async def`. `@per_sample` lifts `fn(input, spec)` to that batch form.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from evr1.problem_types import ProblemType

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.specs import RewardSpec

PER_SAMPLE_ATTR = "__evr1_per_sample__"
SPEC_CHECK_ATTR = "__evr1_check_spec__"
WARM_UP_ATTR = "__evr1_warm_up__"
STATUS_ATTR = "__evr1_status__"

# What a box's numbers count: pixels of the image as the model saw it (resized), a 0-1000 grid over
# the image, or fractions of it.
BoxUnits = Literal["pixels", "relative_1000", "normalized", "source_pixels"]
# The units each Qwen-VL family answers boxes in (by `evr1.models.families.family`).
MODEL_BOX_UNITS: dict[str, BoxUnits] = {
    "qwen2-vl": "relative_1000", "qwen2.5-vl": "pixels", "qwen3-vl": "relative_1000", "qwen3.5": "relative_1000"
}


def model_box_units(family: str) -> BoxUnits:
    """The box units a model family answers in (Qwen2.5-VL: pixels of its resized input; Qwen2/3-VL, Qwen3.5: 0-1000)."""
    try:
        return MODEL_BOX_UNITS[family]
    except KeyError:
        raise ValueError(f"no box convention known for model family {family!r}; known: {', '.join(MODEL_BOX_UNITS)}") from None


@dataclass(frozen=True)
class Shown:
    """What the model was shown of a record (its first video, else its first image) and the units it
    answers boxes in: what the rewards need to read its answers (recorded by the prompt builder)."""

    size: tuple[int, int]  # (width, height) of the frames or image as shown (resized)
    source_size: tuple[int, int] | None = None  # (width, height) of the original frames or image
    frame_timestamps: tuple[float, ...] | None = None  # seconds since the clip's first frame; None for an image
    fps: float | None = None  # sampled frames per second
    box_units: BoxUnits | None = None  # the answering model's convention (`model_box_units`)
    clock_offset: float = 0.0  # seconds the prompt's frame times are ahead of the clip clock (source clock: the clip's start)


@dataclass(frozen=True)
class RewardInput:
    """One response to score, with everything a scorer may need about its question."""

    response: str
    answer: Any
    problem_type: ProblemType
    problem: str = ""
    options: tuple[str, ...] | None = None
    duration: float | None = None  # seconds of the (clipped) video
    fps: float | None = None  # frames per second the model saw
    frame_timestamps: tuple[float, ...] | None = None  # of the frames the model saw: seconds since the clip's first frame
    meta: Mapping[str, Any] = field(default_factory=dict)
    group_id: str | None = None
    sample_id: str | None = None
    shown_size: tuple[int, int] | None = None  # (width, height) of the image / frames as the model saw them
    source_size: tuple[int, int] | None = None  # (width, height) of the original image / video frame
    box_units: BoxUnits | None = None  # what the model's box numbers count (None: unknown, guessed)
    clock_offset: float = 0.0  # seconds the response's times are ahead of the clip clock (the prompt's clock)

    def __post_init__(self) -> None:
        object.__setattr__(self, "problem_type", ProblemType.parse(self.problem_type))
        if not isinstance(self.response, str):
            object.__setattr__(self, "response", "" if self.response is None else str(self.response))
        if self.options is not None and not isinstance(self.options, tuple):
            object.__setattr__(self, "options", tuple(str(o) for o in self.options))
        if self.frame_timestamps is not None and not isinstance(self.frame_timestamps, tuple):
            object.__setattr__(self, "frame_timestamps", tuple(float(t) for t in self.frame_timestamps))
        for name in ("shown_size", "source_size"):
            size = getattr(self, name)
            if size is not None and not isinstance(size, tuple):
                object.__setattr__(self, name, tuple(size))
        if self.box_units is not None and self.box_units not in get_args(BoxUnits):
            raise ValueError(f"RewardInput.box_units must be one of {', '.join(get_args(BoxUnits))} or None, got {self.box_units!r}")

    @classmethod
    def from_record(
        cls,
        record: Record | Mapping[str, Any],
        response: str,
        *,
        sample_id: str | None = None,
        group_id: str | None = None,
        duration: float | None = None,
        fps: float | None = None,
        frame_timestamps: Sequence[float] | None = None,
        shown: Shown | None = None,
    ) -> RewardInput:
        """The input for one response to `record`: frame times, fps and sizes from what the model was
        `shown` (explicit `fps`/`frame_timestamps` win); else timing from the record's clip / `meta`.
        A mapping (a JSON record) is validated into a `Record` first (a ValidationError names the field)."""
        if isinstance(record, Mapping):
            from evr1.data.records import Record

            record = Record.model_validate(record)
        meta = dict(record.meta)
        if duration is None:
            duration = _record_duration(record)
        if shown is not None:
            fps = fps if fps is not None else shown.fps
            frame_timestamps = frame_timestamps if frame_timestamps is not None else shown.frame_timestamps
        return cls(
            response=response,
            answer=record.answer,
            problem_type=record.problem_type,
            problem=record.problem,
            options=tuple(record.options) if record.options is not None else None,
            duration=duration,
            fps=fps if fps is not None else _float_or_none(meta.get("fps")),
            frame_timestamps=tuple(frame_timestamps) if frame_timestamps is not None else None,
            meta=meta,
            group_id=group_id if group_id is not None else record.id,
            sample_id=sample_id if sample_id is not None else record.id,
            shown_size=shown.size if shown is not None else None,
            source_size=shown.source_size if shown is not None else None,
            box_units=shown.box_units if shown is not None else None,
            clock_offset=shown.clock_offset if shown is not None else 0.0,
        )


def _float_or_none(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _record_duration(record: Record) -> float | None:
    for media in record.media:
        if media.kind == "video" and media.end is not None:
            return media.end - (media.start or 0.0)
    return _float_or_none(record.meta.get("duration"))


@dataclass(frozen=True)
class RewardOutput:
    """A score in [0, 1] and its named components (at least `accuracy` and `format` from the router).

    `applicable=False` marks a sample the routed scorer declined (score 0, excluded from means);
    `error` holds why a scorer failed (score 0) and `timed_out` whether it ran out of time. `note` is the
    scorer's word on a sample it did score, when it has one (a code answer that timed out or hit a limit).
    """

    score: float
    components: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    applicable: bool = True
    timed_out: bool = False
    note: str | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.score, (int, float)) and 0.0 <= self.score <= 1.0):
            raise ValueError(f"RewardOutput.score must be a float in [0, 1], got {self.score!r}")


ScorerValue = float | RewardOutput | BaseException | None
RewardFn = Callable[..., Any]  # fn(inputs: Sequence[RewardInput], spec: RewardSpec) -> Sequence[ScorerValue]


def per_sample(fn: Callable[[RewardInput, RewardSpec], Any]) -> RewardFn:
    """Lift `fn(input, spec) -> float | RewardOutput | None` (sync or async) to the batch form.

    The router runs a lifted sync function sample by sample, so a slow or failing sample is
    reported on its own. Async functions run concurrently, each under `spec.timeout_s`.
    """
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def batch_async(inputs: Sequence[RewardInput], spec: RewardSpec) -> list[ScorerValue]:
            async def one(inp: RewardInput) -> ScorerValue:
                try:
                    return await asyncio.wait_for(fn(inp, spec), spec.timeout_s)
                except TimeoutError:
                    return TimeoutError(f"timed out after {spec.timeout_s:g} s")
                except Exception as exc:  # noqa: BLE001 - one sample's failure is that sample's result
                    return exc

            return list(await asyncio.gather(*(one(i) for i in inputs)))

        setattr(batch_async, PER_SAMPLE_ATTR, fn)
        return batch_async

    @functools.wraps(fn)
    def batch(inputs: Sequence[RewardInput], spec: RewardSpec) -> list[ScorerValue]:
        out: list[ScorerValue] = []
        for inp in inputs:
            try:
                out.append(fn(inp, spec))
            except Exception as exc:  # noqa: BLE001 - one sample's failure is that sample's result
                out.append(exc)
        return out

    setattr(batch, PER_SAMPLE_ATTR, fn)
    return batch


_PER_SAMPLE_HINT = "a function of one input needs @per_sample (from evr1.rewards import per_sample)"


def checked_batch(name: str, reward: RewardFn) -> RewardFn:
    """`reward` (a batch function) whose mistakes of form name the likely fix: a lone value returned
    for the batch, or an input's attribute asked of the list of inputs. `@per_sample` rewards are
    returned as they are (their form is right by construction)."""
    if getattr(reward, PER_SAMPLE_ATTR, None) is not None:
        return reward

    def values_of(values: Any, count: int) -> Any:
        if isinstance(values, (str, bytes, Mapping, RewardOutput)) or not isinstance(values, Iterable):
            raise TypeError(
                f"reward {name!r} returned one {type(values).__name__} for a batch of {count} inputs: a reward takes"
                f" the list of inputs and returns one value per input; {_PER_SAMPLE_HINT}"
            )
        return values

    def hinted(exc: AttributeError) -> None:
        if "'list' object has no attribute" in str(exc):
            exc.args = (f"{exc}: reward {name!r} was given the list of inputs; {_PER_SAMPLE_HINT}",)

    async def awaited(values: Any, count: int) -> Any:
        try:
            return values_of(await values, count)
        except AttributeError as exc:
            hinted(exc)
            raise

    @functools.wraps(reward)
    def batch(inputs: Sequence[RewardInput], spec: RewardSpec) -> Any:
        try:
            values = reward(inputs, spec)
        except AttributeError as exc:
            hinted(exc)
            raise
        return awaited(values, len(inputs)) if inspect.isawaitable(values) else values_of(values, len(inputs))

    return batch


def sample_function(reward: RewardFn) -> Callable[[RewardInput, RewardSpec], Any] | None:
    """The synchronous per-sample function behind a `@per_sample` reward, if it has one."""
    fn = getattr(reward, PER_SAMPLE_ATTR, None)
    return None if fn is None or inspect.iscoroutinefunction(fn) else fn


def with_spec_check(reward: RewardFn, check: Callable[[RewardSpec, str], None]) -> RewardFn:
    """Attach `check(spec, name)`, which the router calls when it is built (e.g. "is a judge configured?")."""
    setattr(reward, SPEC_CHECK_ATTR, check)
    return reward


def spec_check(reward: RewardFn) -> Callable[[RewardSpec, str], None] | None:
    return getattr(reward, SPEC_CHECK_ATTR, None)


def with_warm_up(reward: RewardFn, warm_up: Callable[[], None]) -> RewardFn:
    """Attach `warm_up()`, which `RewardRouter.warm_up` calls once at worker start (slow imports, caches)."""
    setattr(reward, WARM_UP_ATTR, warm_up)
    return reward


def warm_up_of(reward: RewardFn) -> Callable[[], None] | None:
    return getattr(reward, WARM_UP_ATTR, None)


def with_status(reward: RewardFn, status: Callable[[RewardSpec], list[str]]) -> RewardFn:
    """Attach `status(spec)`: lines on how the reward runs on this machine under `spec` (e.g. the code sandbox
    and the limits in force), which `evr1 rewards describe` prints."""
    setattr(reward, STATUS_ATTR, status)
    return reward


def status_of(reward: RewardFn) -> Callable[[RewardSpec], list[str]] | None:
    return getattr(reward, STATUS_ATTR, None)
