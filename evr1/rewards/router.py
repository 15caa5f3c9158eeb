"""The reward router: problem type -> registered reward, plus the format reward, combined.

Every canonical problem type routes to the reward registered under its own name
(`multiple_choice` -> `REWARDS["multiple_choice"]`) unless `RewardSpec.routes` names another
(a plugin such as `acme/st_iou`, or `open_ended_judge`). The score is the weighted mean of the
accuracy and format components (weights normalised to sum 1; format `none` drops it).
A reward that raises or times out gives that sample score 0 with `error` set, is logged with the
sample id and counted in the metrics; with `fail_on_error` the step fails instead.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from evr1.errors import ConfigError
from evr1.problem_types import ProblemType
from evr1.registry import REWARDS
from evr1.rewards.contract import RewardFn, RewardInput, RewardOutput, spec_check
from evr1.rewards.execution import Failure, run_all
from evr1.rewards.format_reward import format_score
from evr1.specs import RewardSpec

logger = logging.getLogger("evr1.rewards")


class RewardScoringError(RuntimeError):
    """Scorers failed on some samples and `RewardSpec.fail_on_error` is set."""


class RewardRouter:
    """Scores batches of responses: `RewardRouter(spec).score(inputs) -> list[RewardOutput]`."""

    def __init__(self, spec: RewardSpec | None = None) -> None:
        self.spec = spec if spec is not None else RewardSpec()
        self.routes: dict[ProblemType, str] = {t: self.spec.routes.get(t, t.value) for t in ProblemType}
        self._rewards: dict[str, RewardFn] = {}
        for problem_type, name in self.routes.items():
            reward = REWARDS.get(name)
            if not callable(reward):
                raise ConfigError(f"reward.routes[{problem_type.value!r}]: {name!r} is not callable")
            check = spec_check(reward)
            if check is not None:
                check(self.spec, name)
            self._rewards[name] = reward
        format_weight = self.spec.format_weight if self.spec.format != "none" else 0.0
        total = self.spec.accuracy_weight + format_weight
        self._weights = (self.spec.accuracy_weight, format_weight) if total > 0 else (1.0, 0.0)

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
        results = run_all([(self._rewards[n], [inputs[i] for i in groups[n]]) for n in names], self.spec)
        outputs: list[RewardOutput | None] = [None] * len(inputs)
        for name, values in zip(names, results):
            for i, value in zip(groups[name], values):
                outputs[i] = self._combine(name, inputs[i], i, value)
        failures = [(inputs[i], o) for i, o in enumerate(outputs) if o is not None and o.error]
        if failures and self.spec.fail_on_error:
            shown = "; ".join(o.error or "" for _, o in failures[:5])
            raise RewardScoringError(f"{len(failures)} sample(s) failed to score: {shown}")
        return outputs  # type: ignore[return-value]

    def _combine(self, name: str, inp: RewardInput, index: int, value: Any) -> RewardOutput:
        fmt = format_score(inp, self.spec)
        components: dict[str, float] = {}
        if isinstance(value, RewardOutput):
            if value.error or not value.applicable:
                value = Failure(value.error, value.timed_out) if value.error else None
            else:
                components = {k: float(v) for k, v in value.components.items()}
                fmt = components.get("format", fmt)
                value = components.get("accuracy", value.score)
        if value is None:
            return RewardOutput(0.0, {"accuracy": 0.0, "format": fmt}, applicable=False)
        if not isinstance(value, Failure) and not _unit(value):
            value = Failure(f"returned {value!r}, not a float in [0, 1] or None")
        if isinstance(value, Failure):
            sample = inp.sample_id if inp.sample_id is not None else f"#{index}"
            error = f"reward {name!r} {'timed out' if value.timed_out else 'failed'} on sample {sample}: {value.message}"
            logger.warning(error)
            return RewardOutput(0.0, {"accuracy": 0.0, "format": fmt}, error=error, timed_out=value.timed_out)
        accuracy = float(value)
        wa, wf = self._weights
        total = (wa * accuracy + wf * fmt) / (wa + wf)
        return RewardOutput(min(1.0, max(0.0, total)), {**components, "accuracy": accuracy, "format": fmt})

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
        if outputs:
            metrics["reward/score"] = sum(o.score for o in outputs) / len(outputs)
        metrics["reward/errors"] = float(sum(o.error is not None for o in outputs))
        metrics["reward/timeouts"] = float(sum(o.timed_out for o in outputs))
        return metrics


def _unit(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0.0 <= value <= 1.0
