"""Offline-online mixers (registry `mixers`): curated trajectories take slots in on-policy groups.

An offline trajectory is tokenised exactly as the policy would have produced it (the response
text, then the end-of-turn token), truncated to the response budget, and flagged `offline` so
the loss treats it as off-policy data: its behaviour log-probs are the record's
`offline_logprobs` when given, else unknown (NaN), never the current policy's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from evr1.data.records import Record
from evr1.errors import ConfigError, Evr1Error
from evr1.registry import MIXERS
from evr1.specs import MixerSpec


@dataclass(frozen=True)
class Trajectory:
    """One member of a GRPO group: response tokens, behaviour log-probs, and whether it is offline."""

    prompt_index: int
    token_ids: torch.Tensor  # (R,) int64, the stop token included when finish_reason == "stop"
    logprobs: torch.Tensor  # (R,) float32 behaviour log-probs; NaN where unknown
    finish_reason: Literal["stop", "length"]
    text: str
    offline: bool = False

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])

    @classmethod
    def online(cls, result: Any) -> Trajectory:
        """From an engine's `RolloutResult` (its log-probs are the sampling policy's)."""
        return cls(result.prompt_index, result.token_ids, result.logprobs, result.finish_reason, result.text)


def offline_trajectory(record: Record, prompt_index: int, tokenizer: Any, stop_token_id: int, max_tokens: int) -> Trajectory:
    """The record's `offline_response` as response tokens: text tokens + stop token, truncated."""
    if record.offline_response is None:
        raise Evr1Error(f"record {record.id!r} has no offline_response to mix in")
    ids = list(tokenizer(record.offline_response, add_special_tokens=False)["input_ids"])
    logprobs = [math.nan] * (len(ids) + 1)
    if record.offline_logprobs is not None:
        given = record.offline_logprobs
        if len(given) not in (len(ids), len(ids) + 1):
            raise Evr1Error(
                f"record {record.id!r}: offline_logprobs has {len(given)} values but offline_response is"
                f" {len(ids)} tokens (+1 for the stop token) with this model's tokenizer"
            )
        logprobs[: len(given)] = given
    ids.append(stop_token_id)
    finish: Literal["stop", "length"] = "stop" if len(ids) <= max_tokens else "length"
    ids, logprobs = ids[:max_tokens], logprobs[:max_tokens]
    return Trajectory(
        prompt_index=prompt_index,
        token_ids=torch.tensor(ids, dtype=torch.long),
        logprobs=torch.tensor(logprobs, dtype=torch.float32),
        finish_reason=finish,
        text=record.offline_response,
        offline=True,
    )


@MIXERS.register("offline_k")
class OfflineK:
    """Always k offline trajectories per group of n (the engine samples only n - k online).

    Records without an `offline_response` keep a fully on-policy group of n; that is counted, as
    are truncated offline responses.
    """

    def __init__(self, spec: MixerSpec, n: int) -> None:
        if not 0 < spec.k < n:
            raise ConfigError(f"mixer offline_k needs 0 < k < rollout.n, got k={spec.k}, n={n}")
        self.k, self.n = spec.k, n

    def online_count(self, record: Record) -> int:
        """How many on-policy responses to sample for this record's group."""
        return self.n - self.k if record.offline_response is not None else self.n

    def mix(
        self,
        records: Sequence[Record],
        online: Sequence[Sequence[Any]],
        *,
        tokenizer: Any,
        stop_token_id: int,
        max_tokens: int,
    ) -> tuple[list[list[Trajectory]], dict[str, float]]:
        """Groups of n trajectories (online first, then offline) and the mixer's metrics."""
        groups, truncated, mixed = [], 0, 0
        for i, (record, results) in enumerate(zip(records, online, strict=True)):
            if len(results) != self.online_count(record):
                raise Evr1Error(f"record {record.id!r}: expected {self.online_count(record)} online responses, got {len(results)}")
            group = [Trajectory.online(r) for r in results]
            if record.offline_response is not None:
                extra = [offline_trajectory(record, i, tokenizer, stop_token_id, max_tokens) for _ in range(self.k)]
                truncated += sum(t.finish_reason == "length" for t in extra)
                mixed += 1
                group += extra
            groups.append(group)
        total = sum(len(g) for g in groups)
        offline = sum(t.offline for g in groups for t in g)
        metrics = {
            "mixer/groups_mixed": float(mixed),
            "mixer/offline_share": offline / total if total else 0.0,
            "mixer/offline_truncated": float(truncated),
        }
        return groups, metrics
