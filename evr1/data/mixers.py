"""Offline-online mixers (registry `mixers`): curated trajectories take slots in on-policy groups.

An offline trajectory is tokenised exactly as the policy would have produced it (the response
text, then the end-of-turn token), truncated to the response budget (then rewarded on the text of
the tokens it keeps, like an online response cut there), and flagged `offline` so the loss
treats it as off-policy data: its behaviour log-probs are the given ones (the record's
`offline_logprobs`, or a curated file's `logprobs`) when known, else NaN, never the current
policy's. Given log-probs must be of the distribution the learner scores: `log_softmax(logits / T)`
at the run's `rollout.temperature`, without top-k/top-p.

Offline responses come from the records' `offline_response`, or from `MixerSpec.file`, a JSONL
of curated responses, several per record id. Three placements of k offline per group of n:
`offline_k` (always), `offline_k_threshold` (only groups whose on-policy accuracy, over the
responses their reward applies to, is below a threshold: n are sampled and scored, and k of them
are replaced), `offline_k_decay` (k decays linearly to 0 over `decay_steps`).

Every mixer is a pure function of the step number, the data and the step's rollouts (which
curated response is used rotates with the step), so it has no state to checkpoint: a resumed
run mixes exactly like an uninterrupted one.

Built with `MIXERS.get(name)(spec, n, records=train_records, tokenizer=..., stop_token_id=...,
max_tokens=rollout.max_response_tokens)`, which tokenises every offline response once and checks
them all (one error lists every response whose log-probs do not match its tokens); the driver
then calls `online_count(record, step)` (responses to sample), then `mix(...)`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
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
    # A multi-turn (tool-using) response only, as in `RolloutResult`; None for a single turn.
    policy_mask: torch.Tensor | None = None
    response_mm: Mapping[str, torch.Tensor] | None = None
    transcript: str | None = None

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])

    @classmethod
    def online(cls, result: Any) -> Trajectory:
        """From an engine's `RolloutResult` (its log-probs are the sampling policy's)."""
        return cls(result.prompt_index, result.token_ids, result.logprobs, result.finish_reason, result.text,
                   policy_mask=result.policy_mask, response_mm=result.response_mm, transcript=result.transcript)


@dataclass(frozen=True)
class OfflineResponse:
    """A curated response, its behaviour log-probs if known, and where it came from (for errors):
    `origin` ("record 'x'" or "curated.jsonl:3 (record 'x')") and the names of its two fields there."""

    text: str
    logprobs: tuple[float, ...] | None
    origin: str
    text_field: str = "offline_response"
    logprobs_field: str = "offline_logprobs"

    @classmethod
    def of_record(cls, record: Record) -> OfflineResponse:
        """The record's own `offline_response` (and `offline_logprobs`)."""
        given = tuple(record.offline_logprobs) if record.offline_logprobs is not None else None
        return cls(record.offline_response, given, f"record {record.id!r}")  # type: ignore[arg-type]


def tokenise(response: OfflineResponse, prompt_index: int, tokenizer: Any, stop_token_id: int, max_tokens: int) -> Trajectory:
    """Response text tokens + the stop token, truncated to `max_tokens` (then finish_reason "length").

    A truncated response's `text` is its kept tokens decoded without special tokens, as an online
    response cut at the budget is, so it is rewarded on what it is trained on.
    """
    ids = list(tokenizer(response.text, add_special_tokens=False)["input_ids"])
    logprobs = [math.nan] * (len(ids) + 1)
    if response.logprobs is not None:
        given = response.logprobs
        if len(given) not in (len(ids), len(ids) + 1):
            raise Evr1Error(
                f"{response.origin}: {response.logprobs_field} has {len(given)} values but {response.text_field} is"
                f" {len(ids)} tokens (+1 for the stop token) with this model's tokenizer"
            )
        logprobs[: len(given)] = given
    ids.append(stop_token_id)
    cut = len(ids) > max_tokens
    ids, logprobs = ids[:max_tokens], logprobs[:max_tokens]
    return Trajectory(
        prompt_index=prompt_index,
        token_ids=torch.tensor(ids, dtype=torch.long),
        logprobs=torch.tensor(logprobs, dtype=torch.float32),
        finish_reason="length" if cut else "stop",
        text=tokenizer.decode(ids, skip_special_tokens=True) if cut else response.text,
        offline=True,
    )


def read_curated(path: str | Path, record_ids: set[str]) -> dict[str, list[OfflineResponse]]:
    """Curated responses by record id from a JSONL file; errors name file:line and the record id."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"mixer.file {str(path)!r} does not exist")
    out: dict[str, list[OfflineResponse]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise Evr1Error(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("response"), str):
            raise Evr1Error(f'{where}: expected an object with string fields "id" and "response"')
        rid, logprobs = row["id"], row.get("logprobs")
        where = f"{where} (record {rid!r})"
        extra = sorted(set(row) - {"id", "response", "logprobs"})
        if extra:
            raise Evr1Error(f"{where}: unknown field(s) {', '.join(extra)}; expected id, response, logprobs")
        if rid not in record_ids:
            raise Evr1Error(f"{where}: no training record has this id")
        if logprobs is not None and not (
            isinstance(logprobs, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in logprobs)
        ):
            raise Evr1Error(f'{where}: "logprobs" must be a list of numbers')
        given = None if logprobs is None else tuple(map(float, logprobs))
        out.setdefault(rid, []).append(OfflineResponse(row["response"], given, where, "response", "logprobs"))
    if not out:
        raise ConfigError(f"mixer.file {str(path)!r} holds no curated responses")
    return out


def offline_responses(spec: MixerSpec, records: Sequence[Record]) -> dict[str, list[OfflineResponse]]:
    """The curated responses a mixer uses, by record id: `spec.file`'s if given, else the records' own."""
    if spec.file:
        return read_curated(spec.file, {r.id for r in records})
    return {r.id: [OfflineResponse.of_record(r)] for r in records if r.offline_response is not None}


def over_budget(responses: Mapping[str, Sequence[OfflineResponse]], tokenizer: Any, max_tokens: int
                ) -> list[tuple[OfflineResponse, int]]:
    """The responses longer than `max_tokens` with their stop token, and that length: a mixer cuts them."""
    found = []
    for options in responses.values():
        for response in options:
            length = len(tokenizer(response.text, add_special_tokens=False)["input_ids"]) + 1
            if length > max_tokens:
                found.append((response, length))
    return found


class OfflineSource:
    """Every record's offline responses, tokenised once: the curated file's if given, else the records' own.

    All are checked up front; one `Evr1Error` lists every response whose log-probs do not match
    its tokens (file:line or record id, and the field), so none can stop a run mid-way.
    """

    def __init__(
        self, spec: MixerSpec, records: Sequence[Record], tokenizer: Any, stop_token_id: int, max_tokens: int
    ) -> None:
        responses = offline_responses(spec, records)
        self.tokenised: dict[str, list[Trajectory]] = {}
        problems = []
        for rid, options in responses.items():
            for response in options:
                try:
                    trajectory = tokenise(response, 0, tokenizer, stop_token_id, max_tokens)
                except Evr1Error as exc:
                    problems.append(str(exc))
                    continue
                self.tokenised.setdefault(rid, []).append(trajectory)
        if problems:
            total = sum(map(len, responses.values()))
            raise Evr1Error(
                f"{len(problems)} of {total} offline responses do not match their log-probs (fix them or drop"
                " the log-probs):\n  "
                + "\n  ".join(problems)
            )

    def has(self, record: Record) -> bool:
        return record.id in self.tokenised

    def pick(self, record: Record, k: int, step: int, prompt_index: int) -> list[Trajectory]:
        """k trajectories for this record at this step (several curated responses rotate from step to step)."""
        options = self.tokenised[record.id]
        return [replace(options[(step * k + j) % len(options)], prompt_index=prompt_index) for j in range(k)]


def _metrics(groups: Sequence[Sequence[Trajectory]], mixed: int, truncated: int, **extra: float) -> dict[str, float]:
    total = sum(len(g) for g in groups)
    offline = sum(t.offline for g in groups for t in g)
    return {
        "mixer/groups_mixed": float(mixed),
        "mixer/offline_share": offline / total if total else 0.0,
        "mixer/offline_truncated": float(truncated),
        **{f"mixer/{k}": float(v) for k, v in extra.items()},
    }


class _Mixer:
    """Shared parts: k, n, the offline source, and the settings that do not apply to this mixer."""

    name = ""
    uses_online_scores = False  # True: `mix` needs the online responses' accuracies
    own_fields: tuple[str, ...] = ()

    def __init__(
        self, spec: MixerSpec, n: int, *, records: Sequence[Record] = (), tokenizer: Any, stop_token_id: int,
        max_tokens: int,
    ) -> None:
        if not 0 < spec.k < n:
            raise ConfigError(f"mixer {self.name} needs 0 < k < rollout.n, got k={spec.k}, n={n}")
        for field in ("threshold", "decay_steps"):
            if field in self.own_fields and getattr(spec, field) is None:
                raise ConfigError(f"mixer {self.name} needs mixer.{field}")
            if field not in self.own_fields and getattr(spec, field) is not None:
                raise ConfigError(f"mixer.{field} does not apply to mixer {self.name}")
        self.k, self.n = spec.k, n
        self.source = OfflineSource(spec, records, tokenizer, stop_token_id, max_tokens)

    @staticmethod
    def _check(record: Record, results: Sequence[Any], expected: int) -> None:
        if len(results) != expected:
            raise Evr1Error(f"record {record.id!r}: expected {expected} online responses, got {len(results)}")


@MIXERS.register("offline_k")
class OfflineK(_Mixer):
    """Always k offline trajectories per group of n (the engine samples only n - k online).

    Records without offline responses keep a fully on-policy group of n; that is counted, as
    are truncated offline responses.
    """

    name = "offline_k"

    def k_at(self, step: int) -> int:
        """Offline responses per group at this step."""
        return self.k

    def online_count(self, record: Record, step: int) -> int:
        """How many on-policy responses to sample for this record's group."""
        k = self.k_at(step)
        return self.n - k if k and self.source.has(record) else self.n

    def mix(
        self,
        records: Sequence[Record],
        online: Sequence[Sequence[Any]],
        *,
        step: int,
        online_scores: Sequence[Sequence[float | None]] | None = None,
    ) -> tuple[list[list[Trajectory]], dict[str, float]]:
        """Groups of n trajectories (online first, then offline) and the mixer's metrics."""
        groups, truncated, mixed, k = [], 0, 0, self.k_at(step)
        for i, (record, results) in enumerate(zip(records, online, strict=True)):
            self._check(record, results, self.online_count(record, step))
            group = [Trajectory.online(r) for r in results]
            if len(group) < self.n:
                extra = self.source.pick(record, k, step, i)
                truncated += sum(t.finish_reason == "length" for t in extra)
                mixed += 1
                group += extra
            groups.append(group)
        return groups, _metrics(groups, mixed, truncated, k=k)


@MIXERS.register("offline_k_decay")
class OfflineKDecay(OfflineK):
    """k offline per group at step 1, decaying linearly: ceil(k (S + 1 - step) / S), 0 after step S."""

    name = "offline_k_decay"
    own_fields = ("decay_steps",)

    def __init__(self, spec: MixerSpec, n: int, **kwargs: Any) -> None:
        super().__init__(spec, n, **kwargs)
        self.decay_steps = int(spec.decay_steps)  # type: ignore[arg-type]

    def k_at(self, step: int) -> int:
        left = max(0, self.decay_steps + 1 - step)
        return -(-self.k * left // self.decay_steps)


@MIXERS.register("offline_k_threshold")
class OfflineKThreshold(_Mixer):
    """k offline per group only where the group's on-policy accuracy is below `threshold`.

    The engine samples all n; the driver scores them; in low groups the last k online responses
    are dropped (counted: `mixer/online_dropped`) and k offline ones take their place. Low groups
    whose record has no offline response stay on-policy (`mixer/low_unmixed`).
    """

    name = "offline_k_threshold"
    uses_online_scores = True
    own_fields = ("threshold",)

    def __init__(self, spec: MixerSpec, n: int, **kwargs: Any) -> None:
        super().__init__(spec, n, **kwargs)
        self.threshold = float(spec.threshold)  # type: ignore[arg-type]

    def online_count(self, record: Record, step: int) -> int:
        return self.n

    def mix(
        self,
        records: Sequence[Record],
        online: Sequence[Sequence[Any]],
        *,
        step: int,
        online_scores: Sequence[Sequence[float | None]] | None = None,
    ) -> tuple[list[list[Trajectory]], dict[str, float]]:
        """Groups of n: low groups keep their first n - k online responses, then k offline.

        A group's accuracy is the mean over its applicable scores (None: the reward does not apply);
        a group without any is not judged, so not mixed.
        """
        if online_scores is None:
            raise Evr1Error(f"mixer {self.name} needs the online responses' accuracies (online_scores)")
        groups, truncated, mixed, unmixed = [], 0, 0, 0
        for i, (record, results, scores) in enumerate(zip(records, online, online_scores, strict=True)):
            self._check(record, results, self.n)
            group = [Trajectory.online(r) for r in results]
            applicable = [s for s in scores if s is not None]
            if applicable and sum(applicable) / len(applicable) < self.threshold:
                if self.source.has(record):
                    extra = self.source.pick(record, self.k, step, i)
                    truncated += sum(t.finish_reason == "length" for t in extra)
                    mixed += 1
                    group = group[: self.n - self.k] + extra
                else:
                    unmixed += 1
            groups.append(group)
        return groups, _metrics(groups, mixed, truncated, online_dropped=mixed * self.k, low_unmixed=unmixed)
