"""The reward router: problem type -> registered reward, plus the format reward, combined.

Every canonical problem type routes to the reward registered under its own name
(`multiple_choice` -> `REWARDS["multiple_choice"]`) unless `RewardSpec.routes` names another
(a plugin such as `acme/st_iou`, or `open_ended_judge`). The score is the weighted mean of the
accuracy and format components (weights normalised to sum 1; format `none` drops it) and of the
`RewardSpec.extra` rewards that apply to the sample (each scored on every sample, its value a
component under its name). Rewards run in threads of this process, or in worker processes with hard time
limits (`RewardSpec.isolation`, `evr1.rewards.isolation`). A reward that raises, times out or crashes its
worker process (a route's or an extra one) gives
that sample score 0 with `error` set, is logged with the sample id and counted in the metrics;
with `fail_on_error` the step fails instead. A route the sample does not apply to (None) makes
the whole sample not applicable. A route's `RewardOutput.note` (why a scored sample scored as it did) is kept.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from evr1.errors import ConfigError
from evr1.problem_types import ProblemType
from evr1.registry import REWARDS
from evr1.rewards.contract import RewardFn, RewardInput, RewardOutput, checked_batch, spec_check, warm_up_of
from evr1.rewards.execution import Failure, run_all
from evr1.rewards.format_reward import format_score
from evr1.rewards.isolation import run_in_processes
from evr1.specs import RewardSpec

logger = logging.getLogger("evr1.rewards")


class RewardScoringError(RuntimeError):
    """Scorers failed on some samples and `RewardSpec.fail_on_error` is set."""


class RewardRouter:
    """Scores batches of responses: `RewardRouter(spec).score(inputs) -> list[RewardOutput]`."""

    def __init__(self, spec: RewardSpec | None = None) -> None:
        self.spec = spec if spec is not None else RewardSpec()
        self.routes: dict[ProblemType, str] = {t: self.spec.routes.get(t, t.value) for t in ProblemType}
        self.extra: dict[str, float] = dict(self.spec.extra)
        self._rewards: dict[str, RewardFn] = {}
        for where, name in [*((f"routes[{t.value!r}]", n) for t, n in self.routes.items()),
                            *((f"extra[{n!r}]", n) for n in self.extra)]:  # fmt: skip
            if name not in self._rewards:
                self._rewards[name] = self._load(where, name)
        format_weight = self.spec.format_weight if self.spec.format != "none" else 0.0
        total = self.spec.accuracy_weight + format_weight
        self._weights = (self.spec.accuracy_weight, format_weight) if total > 0 else (1.0, 0.0)

    def _load(self, where: str, name: str) -> RewardFn:
        reward = REWARDS.get(name)
        if not callable(reward):
            raise ConfigError(f"reward.{where}: {name!r} is not callable")
        check = spec_check(reward)
        if check is not None:
            check(self.spec, name)
        return checked_batch(name, reward)

    def warm_up(self, problem_types: Iterable[ProblemType | str] | None = None) -> None:
        """Run the warm-up (slow imports, e.g. ROUGE's) now, at worker start: of the rewards routed from
        `problem_types` (default: every type) and of every extra reward. A run passes the types its data holds,
        so a worker never imports a scorer no sample can reach."""
        names = self._rewards if problem_types is None else {*(self.route(t) for t in problem_types), *self.extra}
        for reward in (self._rewards[name] for name in names):
            warm = warm_up_of(reward)
            if warm is not None:
                warm()

    def route(self, problem_type: ProblemType | str) -> str:
        """The reward name a problem type is scored with; raises on an unmapped type."""
        canonical = ProblemType.parse(problem_type)
        if canonical not in self.routes:
            raise ConfigError(f"problem type {canonical.value!r} has no reward route")
        return self.routes[canonical]

    def score(self, inputs: Sequence[RewardInput]) -> list[RewardOutput]:
        """One output per input, in order (synchronous; rewards run concurrently inside)."""
        groups: dict[str, list[int]] = defaultdict(list)
        for i, inp in enumerate(inputs):
            groups[self.route(inp.problem_type)].append(i)
        names = list(groups)
        jobs = [(n, self._rewards[n], [inputs[i] for i in groups[n]]) for n in names]
        jobs += [(n, self._rewards[n], list(inputs)) for n in self.extra if inputs]
        if self.spec.isolation == "processes":
            results = run_in_processes(jobs, self.spec)
        else:
            results = run_all([(fn, batch) for _, fn, batch in jobs], self.spec)
        extras = results[len(names) :]
        outputs: list[RewardOutput | None] = [None] * len(inputs)
        for name, values in zip(names, results):
            for i, value in zip(groups[name], values):
                outputs[i] = self._combine(name, inputs[i], i, value, [e[i] for e in extras])
        failures = [(inputs[i], o) for i, o in enumerate(outputs) if o is not None and o.error]
        if failures and self.spec.fail_on_error:
            shown = "; ".join(o.error or "" for _, o in failures[:5])
            raise RewardScoringError(f"{len(failures)} sample(s) failed to score: {shown}")
        return outputs  # type: ignore[return-value]

    def _combine(self, name: str, inp: RewardInput, index: int, value: Any, extras: Sequence[Any]) -> RewardOutput:
        fmt = format_score(inp, self.spec)
        components: dict[str, float] = {}
        note = None
        if isinstance(value, RewardOutput) and value.applicable and not value.error:
            components = {k: float(v) for k, v in value.components.items()}
            fmt = components.get("format", fmt)
            note = value.note
        value = _value(value)
        if value is None:
            return RewardOutput(0.0, {"accuracy": 0.0, "format": fmt}, applicable=False)
        found = [(name, value), *((n, _value(v)) for n, v in zip(self.extra, extras))]
        failed = next(((n, v) for n, v in found if isinstance(v, Failure)), None)
        if failed is not None:
            sample = inp.sample_id if inp.sample_id is not None else f"#{index}"
            failure = failed[1]
            what = "timed out" if failure.timed_out else "failed"
            error = f"reward {failed[0]!r} {what} on sample {sample}: {failure.message}"
            logger.warning(error)
            return RewardOutput(0.0, {"accuracy": 0.0, "format": fmt}, error=error, timed_out=failure.timed_out)
        accuracy = float(value)
        applied = {n: float(v) for n, v in found[1:] if v is not None}
        wa, wf = self._weights
        weights = wa + wf + sum(self.extra[n] for n in applied)
        total = (wa * accuracy + wf * fmt + sum(self.extra[n] * v for n, v in applied.items())) / weights
        components = {**components, **applied, "accuracy": accuracy, "format": fmt}
        return RewardOutput(min(1.0, max(0.0, total)), components, note=note)

    def metrics(self, inputs: Sequence[RewardInput], outputs: Sequence[RewardOutput]) -> dict[str, float]:
        """`reward/<type>/<component>` means (scored samples), `score`, counts of errors/timeouts."""
        by_type: dict[str, list[RewardOutput]] = defaultdict(list)
        for inp, out in zip(inputs, outputs):
            by_type[inp.problem_type.value].append(out)
        metrics: dict[str, float] = {}
        for type_name, outs in sorted(by_type.items()):
            prefix = f"reward/{type_name}"
            scored = [o for o in outs if o.applicable and o.error is None]
            for key in sorted({k for o in scored for k in o.components}):
                values = [o.components[key] for o in scored if key in o.components]
                metrics[f"{prefix}/{key}"] = sum(values) / len(values)
            metrics[f"{prefix}/score"] = sum(o.score for o in outs) / len(outs)
            metrics[f"{prefix}/count"] = float(len(outs))
            metrics[f"{prefix}/errors"] = float(sum(o.error is not None for o in outs))
            metrics[f"{prefix}/timeouts"] = float(sum(o.timed_out for o in outs))
            metrics[f"{prefix}/not_applicable"] = float(sum(not o.applicable for o in outs))
        for name in self.extra:
            prefix = f"reward/extra/{name}"
            values = [o.components[name] for o in outputs if name in o.components]
            if values:
                metrics[f"{prefix}/mean"] = sum(values) / len(values)
            metrics[f"{prefix}/count"] = float(len(values))  # the samples it applied to (and scored)
        if outputs:
            metrics["reward/score"] = sum(o.score for o in outputs) / len(outputs)
        metrics["reward/errors"] = float(sum(o.error is not None for o in outputs))
        metrics["reward/timeouts"] = float(sum(o.timed_out for o in outputs))
        return metrics


def _value(value: Any) -> float | Failure | None:
    """A scorer value as a float in [0, 1], a Failure, or None (not applicable)."""
    if isinstance(value, RewardOutput):
        if value.error:
            return Failure(value.error, value.timed_out)
        return value.components.get("accuracy", value.score) if value.applicable else None
    if value is None or isinstance(value, Failure) or _unit(value):
        return value
    hint = " (a @per_sample function returns one value for its one input)" if isinstance(value, (list, tuple)) else ""
    return Failure(f"returned {value!r}, not a float in [0, 1] or None{hint}")


def _unit(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0.0 <= value <= 1.0
