"""Scoring a step's responses on the reward workers, each response once.

`Scorer.online_accuracy` scores the sampled responses for a mixer that decides on them;
`Scorer.score_groups` then scores the trajectories the groups hold, reusing those outputs;
`greedy_baselines` turns ReMax's greedy responses into per-record baselines. The rewards see what the
model was shown of each record (`shown`: record id -> `evr1.rewards.contract.Shown`, from the
rollout's prompter): frame times on the clip clock for answers by frame index, sizes and box units
for boxes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from evr1.experiment import Experiment


def reward_input(record: Any, text: str, sample_id: str, shown: Mapping[str, Any] | None) -> Any:
    """The reward input of one response, with what the model was shown of its record when known."""
    from evr1.rewards import RewardInput

    return RewardInput.from_record(record, text, sample_id=sample_id, shown=(shown or {}).get(record.id))


def sample_row(step: int, inp: Any, out: Any) -> dict[str, Any]:
    """One `samples.jsonl` row: the response, its reference answer, its score, and the scorer's error or
    note on it when there is one (why a code answer scored 0: a timeout, a limit)."""
    row = {"step": step, "id": inp.sample_id, "response": inp.response, "answer": str(inp.answer), "score": out.score}
    return row | {k: v for k in ("error", "note") if (v := getattr(out, k)) is not None}


@dataclass(frozen=True)
class SampledRewards:
    """Every sampled response's reward, scored before mixing for a mixer that decides on them.

    `scores[g][j]`: the accuracy (else score) of group g's j-th response, None where the reward does not apply
    or failed (an outage is not a wrong answer); `by_response[(g, j)]`: its text and reward output, reused when
    the mixer keeps it; `inputs`, `outputs`: every (input, output) pair, for the sampled-response metrics.
    """

    scores: list[list[float | None]]
    by_response: dict[tuple[int, int], tuple[str, Any]]
    inputs: list[Any]
    outputs: list[Any]


class GreedyBaselines(NamedTuple):
    """ReMax: the (shaped) score of each record's greedy response, and their mean."""

    per_record: list[float]
    mean: float


class Scorer:
    """Scores responses on `rewarders` (reward worker actors), shard k on worker k; `get` waits for Ray
    results, naming the step and the worker when one fails (`evr1.runner.ray.workers.get`)."""

    def __init__(self, rewarders: Sequence[Any], get: Callable[[Any, int, str], Any]) -> None:
        self.rewarders, self.get = list(rewarders), get

    def score(self, records: Sequence[Any], texts: Sequence[str], ids: Sequence[str], step: int,
              shown: Mapping[str, Any] | None = None) -> tuple[list, list]:
        """Reward inputs and outputs of `texts`, the responses to `records`."""
        inputs = [reward_input(r, t, i, shown) for r, t, i in zip(records, texts, ids)]
        shards = [inputs[k :: len(self.rewarders)] for k in range(len(self.rewarders))]
        scored = self.get([w.score.remote(s) for w, s in zip(self.rewarders, shards)], step, "reward worker")
        outputs: list[Any] = [None] * len(inputs)
        for k, shard in enumerate(scored):
            outputs[k :: len(self.rewarders)] = shard
        return inputs, outputs

    def online_accuracy(self, records: Sequence[Any], online: Sequence[Sequence[Any]], step: int,
                        shown: Mapping[str, Any] | None = None) -> SampledRewards:
        """The reward of each online response (`online[g]`: the responses to `records[g]`), for a mixer that
        decides on them; the responses the mixer keeps are then not scored (nor a remote judge asked) again."""
        flat = [(g, j, r) for g, group in enumerate(online) for j, r in enumerate(group)]
        ids = [f"{records[g].id}#{k}" for k, (g, _, _) in enumerate(flat)]
        inputs, outputs = self.score([records[g] for g, _, _ in flat], [r.text for _, _, r in flat], ids, step, shown)
        scores: list[list[float | None]] = [[] for _ in online]
        scored = {}
        for (g, j, r), out in zip(flat, outputs):
            usable = out.applicable and out.error is None
            scores[g].append(out.components.get("accuracy", out.score) if usable else None)
            scored[(g, j)] = (r.text, out)
        return SampledRewards(scores, scored, inputs, outputs)

    def score_groups(self, records: Sequence[Any], flat: Sequence[tuple[int, Any]], step: int,
                     scored: SampledRewards | None = None, shown: Mapping[str, Any] | None = None) -> tuple[list, list]:
        """Reward inputs and outputs of every trajectory (`flat`: (group, trajectory)); online ones already
        `scored` are reused.

        A mixer keeps a prefix of each group's online responses, in order: the j-th online member of
        group g is the j-th response sampled for it (checked by text before reusing its output).
        """
        ids = [f"{records[g].id}#{k}" for k, (g, _) in enumerate(flat)]
        inputs = [reward_input(records[g], t.text, i, shown) for (g, t), i in zip(flat, ids)]
        outputs: list[Any] = [None] * len(flat)
        seen: dict[int, int] = {}
        for k, (g, t) in enumerate(flat):
            if t.offline:
                continue
            j = seen.get(g, 0)
            seen[g] = j + 1
            text, out = scored.by_response.get((g, j), (None, None)) if scored is not None else (None, None)
            if text == t.text:
                outputs[k] = out
        todo = [k for k, out in enumerate(outputs) if out is None]
        if todo:
            _, fresh = self.score([records[flat[k][0]] for k in todo], [flat[k][1].text for k in todo], [ids[k] for k in todo], step,
                                  shown)
            for k, out in zip(todo, fresh):
                outputs[k] = out
        return inputs, outputs


def greedy_baselines(scorer: Scorer, exp: Experiment, records: Sequence[Any], greedy: Sequence[Any],
                     shown: Mapping[str, Any], step: int) -> GreedyBaselines:
    """ReMax baselines: the (shaped) score of each record's greedy response (`greedy[i]`, for `records[i]`)."""
    import torch

    from evr1.runner.loop.advantage_phase import shaped_scores

    _, outputs = scorer.score(records, [g.text for g in greedy], [f"{r.id}#greedy" for r in records], step, shown)
    lengths = torch.tensor([len(g.token_ids) for g in greedy])
    scores, _ = shaped_scores(
        exp.algo, torch.tensor([o.score for o in outputs], dtype=torch.float32), lengths, exp.rollout.max_response_tokens
    )
    return GreedyBaselines([float(v) for v in scores], float(scores.mean()))
