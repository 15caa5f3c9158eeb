"""Sampling: engine, responses per prompt, decoding settings."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from evr1.specs.base import PositiveInt, RegistryName, Spec

_VLLM_FIELDS = ("tensor_parallel_size", "gpu_memory_utilization", "colocate", "enforce_eager")


class RolloutSpec(Spec):
    """Sampling: engine, responses per prompt and decoding settings.

    vLLM settings (an error with `engine="hf"`, which has no use for them):
    `tensor_parallel_size` GPUs per engine; `gpu_memory_utilization` the share of each GPU's
    memory vLLM may take (weights + KV cache); `colocate` shares the learner's GPUs (vLLM sleeps,
    freeing its memory, while the learner trains) instead of GPUs of its own; `enforce_eager`
    skips CUDA-graph capture (slower decoding, faster start, less memory).
    """

    engine: RegistryName("engines") | None = None  # None: vllm on a GPU where installed, else hf
    n: PositiveInt = 8
    temperature: Annotated[float, Field(ge=0)] = 1.0  # 0: greedy, one response per prompt (n must be 1)
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    top_k: int = -1  # -1: off; else the k most likely tokens
    min_p: Annotated[float, Field(ge=0, le=1)] = 0.0  # 0: off; else drop tokens below min_p x the top probability
    repetition_penalty: Annotated[float, Field(gt=0)] = 1.0  # 1: off; >1 discourages tokens of the prompt and response
    stop: tuple[Annotated[str, Field(min_length=1)], ...] = ()  # a response ends with the first of these it writes
    max_prompt_tokens: PositiveInt = 4096
    max_response_tokens: PositiveInt = 512
    tensor_parallel_size: PositiveInt = 1
    gpu_memory_utilization: Annotated[float, Field(gt=0, lt=1)] = 0.6
    colocate: bool = True
    enforce_eager: bool = False

    @field_validator("top_k")
    @classmethod
    def _top_k(cls, value: int) -> int:
        if value == 0 or value < -1:
            raise ValueError(f"must be -1 (off) or a positive number of tokens, got {value}")
        return value

    @model_validator(mode="after")
    def _greedy_is_one_response(self) -> RolloutSpec:
        if self.temperature == 0 and self.n != 1:
            raise ValueError(
                f"temperature=0 is greedy decoding, one response per prompt: set n=1 (got n={self.n}) or temperature > 0"
            )
        return self

    @model_validator(mode="after")
    def _vllm_temperature(self) -> RolloutSpec:
        if self.engine == "vllm" and (self.temperature > 2 or 0 < self.temperature < 0.01):
            raise ValueError(f"the vllm engine samples at temperature 0 or in [0.01, 2] (got {self.temperature})")
        return self

    @model_validator(mode="after")
    def _vllm_only(self) -> RolloutSpec:
        if self.engine == "hf":
            fields = type(self).model_fields
            stray = [name for name in _VLLM_FIELDS if getattr(self, name) != fields[name].default]
            if stray:
                raise ValueError(f"{', '.join(stray)} only apply to the vllm engine, not engine='hf'")
        return self
