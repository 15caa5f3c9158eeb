"""The driver's side of the engine–learner mismatch: metric names per engine, and the one-time warning.

The learners measure the mismatch (`evr1.runner.learner.mismatch`) and return it among their
metrics as `learner/mismatch/...` and `learner/rollout_corr/...`. `MismatchReport.report` renames
them `mismatch/<engine>/...` (the engine that sampled the rows: `RolloutSpec.engine`, or
the default the rollout worker picks) and
`rollout_corr/...`, and the first time `mismatch/<engine>/k3` exceeds
`AlgoSpec.rollout_correction.warn_k3` it warns, naming the likely cause (`mismatch_warning`).
"""

from __future__ import annotations

import warnings
from collections.abc import MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evr1.experiment import Experiment

_RENAMES = (("learner/mismatch/", "mismatch/{engine}/"), ("learner/rollout_corr/", "rollout_corr/"))


class EngineMismatchWarning(UserWarning):
    """The rollout engine and the learner disagree far beyond numerical noise."""


class MismatchReport:
    """Per run: the engine's name, its dtype and the learner's (for the warning), and whether it warned."""

    def __init__(self, exp: Experiment) -> None:
        from evr1.runner.ray.actors import default_engine

        self.engine = exp.rollout.engine or default_engine()  # None: what the rollout worker picks (same rule)
        self.warn_k3 = exp.algo.rollout_correction.warn_k3
        self.engine_dtype = str(exp.model.dtype)
        same = exp.model.dtype == "float32"
        self.learner_dtype = "float32" if same else f"float32 weights with {exp.model.dtype} autocast"
        self.warned = False

    def report(self, metrics: MutableMapping[str, float]) -> None:
        """Rename the learners' mismatch metrics in place, and warn once when they are far out of line."""
        for key in [k for k in metrics if k.startswith(tuple(old for old, _ in _RENAMES))]:
            for old, new in _RENAMES:
                if key.startswith(old):
                    metrics[new.format(engine=self.engine) + key[len(old) :]] = metrics.pop(key)
        if self.warned:
            return
        from evr1.algos.rollout_correction import mismatch_warning  # torch: not at import
        prefix = f"mismatch/{self.engine}/"
        headline = {k[len(prefix) :]: v for k, v in metrics.items() if k.startswith(prefix) and k.count("/") == 2}
        message = mismatch_warning(
            headline, warn_k3=self.warn_k3, engine=self.engine, engine_dtype=self.engine_dtype,
            learner_dtype=self.learner_dtype,
        ) if headline else None  # fmt: skip
        if message is not None:
            warnings.warn(message, EngineMismatchWarning, stacklevel=2)
            self.warned = True
