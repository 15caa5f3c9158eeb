"""Periodic and command-line benchmark evaluation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from evr1.specs.base import PositiveInt, RegistryName, Spec
from evr1.specs.media import CacheSpec, ImageSpec, VideoSpec
from evr1.specs.rewards import JudgeSpec


class EvalSpec(Spec):
    """Benchmarks evaluated periodically and by `evr1 eval`.

    Answers are greedy, up to `max_response_tokens`; `prompt_mode` "direct" asks for the bare
    answer, "reason" for `<think>` then `<answer>`. Media are read from `cache` when it has a path
    (else decoded live) by `media_workers` threads, `prefetch` samples ahead of generation.
    Open-ended benchmarks call the LLM `judge`. `limit` keeps the first N items per benchmark.
    Both protocols are scored on every evaluation (`evr1.eval.protocols`); `protocol` is the headline:
    "official" (the benchmark authors' scorer) or "strict" (evr1's rules).
    """

    benchmarks: tuple[RegistryName("benchmarks"), ...] = ()
    data_root: str | None = None
    video: VideoSpec = Field(default_factory=VideoSpec)
    image: ImageSpec = Field(default_factory=ImageSpec)
    cache: CacheSpec = Field(default_factory=CacheSpec)
    every_steps: Annotated[int, Field(ge=0)] = 0
    prompt_mode: Literal["direct", "reason"] = "direct"
    max_response_tokens: PositiveInt = 128
    batch_size: PositiveInt = 4
    media_workers: PositiveInt = 2
    prefetch: PositiveInt = 8
    limit: PositiveInt | None = None
    judge: JudgeSpec = Field(default_factory=JudgeSpec)
    protocol: Literal["official", "strict"] = "official"
