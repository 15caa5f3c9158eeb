"""Offline trajectories mixed into on-policy groups."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from evr1.specs.base import PositiveInt, RegistryName, Spec


class MixerSpec(Spec):
    """Offline trajectories placed in on-policy groups (none by default).

    `k` offline responses per group of `rollout.n`. `file`: a JSONL of curated responses
    (`{"id": record_id, "response": text, "logprobs": [...]?}`, several per id) used instead of
    the records' `offline_response`; log-probs at `rollout.temperature`, without top-k/top-p.
    `threshold` (mixer `offline_k_threshold`): mix only groups whose on-policy accuracy (over the
    responses their reward applies to) is below it. `decay_steps` (mixer `offline_k_decay`): k
    decays linearly to 0 over that many steps. Without `name` none of these may be set.
    """

    name: RegistryName("mixers") | None = None
    k: Annotated[int, Field(ge=0)] = 0
    file: str | None = None
    threshold: Annotated[float, Field(gt=0, le=1)] | None = None
    decay_steps: PositiveInt | None = None

    @model_validator(mode="after")
    def _settings_need_a_mixer(self) -> MixerSpec:
        if self.name is None:
            fields = type(self).model_fields
            stray = [
                f"{f}={getattr(self, f)!r}" for f in ("k", "file", "threshold", "decay_steps") if getattr(self, f) != fields[f].default
            ]
            if stray:
                from evr1.registry import MIXERS

                raise ValueError(
                    f"{', '.join(stray)} given without mixer.name, so nothing would be mixed: set mixer.name (one of"
                    f" {', '.join(MIXERS.names())}), or keep k=0 and file, threshold, decay_steps None to train on-policy"
                )
        return self
