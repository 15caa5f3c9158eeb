"""Rewards: the router, the LLM judge and the code sandbox."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from evr1.problem_types import ProblemType
from evr1.specs.base import PositiveInt, Probability, RegistryName, Spec


class JudgeSpec(Spec):
    """An OpenAI-compatible chat endpoint (e.g. a vLLM server) used by the `*_judge` rewards."""

    base_url: str | None = None  # e.g. "http://127.0.0.1:8000/v1"
    model: str | None = None
    api_key_env: str | None = None  # the NAME of an environment variable holding the API key
    timeout_s: Annotated[float, Field(gt=0)] = 30.0
    retries: Annotated[int, Field(ge=0)] = 2
    concurrency: PositiveInt = 8
    max_tokens: PositiveInt = 16


class CodeSandboxSpec(Spec):
    """Running Python answers of `code` problems: in a bubblewrap sandbox, on a SandboxFusion-style service
    (`sandbox="remote"` at `url`, like the judge), or as plain processes only when `sandbox="unsandboxed"`.
    Limits hold per sample (`timeout_s`: wall time of all its tests) and per sandbox (the rest)."""

    execute: bool = True  # False: Python code problems are "not applicable" (score None)
    sandbox: Literal["bubblewrap", "remote", "unsandboxed"] = "bubblewrap"
    url: str | None = None  # remote: the service's root, e.g. "http://127.0.0.1:8080" (POST {url}/run_code)
    retries: Annotated[int, Field(ge=0)] = 2  # remote: retries of a failed request, with back-off
    timeout_s: Annotated[float, Field(gt=0)] = 5.0  # wall time per sample; also the CPU time per process
    memory_mb: PositiveInt = 512  # per sandbox (a cgroup) where the machine allows, else per process
    processes: PositiveInt = 16  # per sandbox, its own 2-3 included
    output_mb: PositiveInt = 1  # the stdout of a program (one stdin/stdout case)
    file_mb: PositiveInt = 16  # all files the answer writes (its tmpfs), its stderr and prints included
    workers: PositiveInt = 2
    # host root where no cgroup can be made: each running sandbox has its own uid and gid from here (so that
    # RLIMIT_NPROC counts per sandbox); uid_base to uid_base + 4095 must belong to no account or process
    uid_base: PositiveInt = 2_000_000

    @model_validator(mode="after")
    def _remote_needs_url(self) -> CodeSandboxSpec:
        if self.sandbox == "remote" and not self.url:
            raise ValueError("code.sandbox='remote' needs code.url, e.g. 'http://127.0.0.1:8080'")
        return self


class RewardSpec(Spec):
    """How responses are scored: per-type routes, answer extraction, format, weights and limits.

    `extra` adds rewards scored for every sample beside its route, by weight (as TRL's `reward_funcs`
    with `reward_weights`): the score is the weighted mean of the accuracy, the format and the extra
    rewards that apply to the sample (one returning None is left out of that sample's mean). Each
    one's value is a component named after it, and gets its own metrics (`reward/extra/<name>/*`).
    """

    routes: dict[ProblemType, RegistryName("rewards")] = {}  # overrides of the default route (type -> same name)
    extra: dict[RegistryName("rewards"), Annotated[float, Field(gt=0)]] = {}  # more rewards for every sample: weight
    accuracy_weight: Probability = 0.9
    format_weight: Probability = 0.1
    format: Literal["full", "partial", "none"] = "full"
    strictness: Literal["lenient", "strict"] = "lenient"  # strict: only an <answer> tag counts
    numeric_rel_tol: Annotated[float, Field(ge=0)] = 0.0  # opt-in numeric tolerance (0: exact)
    numeric_abs_tol: Annotated[float, Field(ge=0)] = 0.0
    timeout_s: Annotated[float, Field(gt=0)] = 10.0  # per sample; a scorer past it is reported
    # Where rewards run: "threads" of the scoring process (cheap; a reward that holds the GIL stalls the step,
    # and one that crashes ends the process), or "processes": each sample (a batch reward: each batch) is a call
    # to one of `process_workers` worker processes, killed at its time limit; a worker that dies is restarted and
    # the call made again once. Either way the sample scores 0 with the reason (`evr1.rewards.isolation`).
    isolation: Literal["threads", "processes"] = "threads"
    process_workers: PositiveInt = 2
    math_timeout_s: Annotated[float, Field(gt=0)] = 5.0  # process-level, per sample
    math_workers: PositiveInt = 2
    fail_on_error: bool = False  # True: a scorer error or timeout fails the step
    # What the numbers of answered boxes count. "auto": the answering model family's convention when the
    # input names it (Qwen2.5-VL: pixels of its resized input; Qwen2/3-VL: 0-1000; an answer whose values
    # are all <= 1 is read as fractions), else guessed from magnitudes; "model": the family's convention,
    # an error when unknown; "pixels" (of the input as shown), "relative_1000", "normalized" (0-1),
    # "source_pixels" (of the original image): for a dataset whose prompt asks for those units.
    box_units: Literal["auto", "model", "pixels", "relative_1000", "normalized", "source_pixels"] = "auto"
    judge: JudgeSpec = Field(default_factory=JudgeSpec)
    code: CodeSandboxSpec = Field(default_factory=CodeSandboxSpec)

    @field_validator("routes", mode="before")
    @classmethod
    def _route_aliases(cls, routes: object) -> object:
        if isinstance(routes, dict):  # "mcq" -> multiple_choice
            return {ProblemType.parse(k): v for k, v in routes.items()}
        return routes

    @model_validator(mode="after")
    def _weights(self) -> RewardSpec:
        if self.accuracy_weight + self.format_weight <= 0:
            raise ValueError("accuracy_weight + format_weight must be positive")
        taken = sorted({"accuracy", "format"} & set(self.extra))
        if taken:
            raise ValueError(f"extra reward names {taken} are the router's own components: weigh them with "
                             "accuracy_weight and format_weight")
        return self
