"""Every example of docs/plugins.md registers and works when called the way evr1 calls it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from evr1.algos.aggregation import Normaliser
from evr1.registry import ADVANTAGES, POLICY_LOSSES, REWARDS, SAMPLERS
from evr1.rewards import RewardInput, RewardOutput, RewardRouter
from evr1.runner.loop.advantage_phase import compute_advantages
from evr1.specs import AlgoSpec, DataSpec, RewardSpec

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
NS = "plugins_doc_test"  # the examples' `me/` names are registered under this namespace


@pytest.fixture(scope="module")
def examples() -> Iterator[dict]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 4
    namespace: dict = {"__name__": "plugins_doc_examples"}
    for block in blocks:
        exec(compile(block.replace('"me/', f'"{NS}/'), str(DOC), "exec"), namespace)  # noqa: S102
    yield namespace
    for registry in (REWARDS, ADVANTAGES, POLICY_LOSSES, SAMPLERS):
        for name in registry.names():
            if name.startswith(f"{NS}/"):
                registry.unregister(name)


def test_reward_example_is_routed_and_keeps_its_own_format(examples: dict) -> None:
    router = RewardRouter(RewardSpec(routes={"numerical": f"{NS}/tally_count"}))
    record = {"id": "c1", "problem": "How many?", "problem_type": "numerical", "answer": "3"}
    responses = ["<answer>|||</answer>", "<answer>||</answer>", "|||", "<answer>3</answer>"]
    outs = router.score([RewardInput.from_record(record, r, sample_id=f"c1#{i}") for i, r in enumerate(responses)])
    # (0.9 accuracy + 0.1 format); "3" is a fine numerical answer for the router's own format rule,
    # but the plugin's format component (tally marks in a tag) replaces it
    assert [o.score for o in outs] == pytest.approx([1.0, 0.1, 0.9, 0.0])
    assert [o.components["format"] for o in outs] == [1.0, 1.0, 0.0, 0.0]


def test_advantage_example_runs_through_compute_advantages(examples: dict) -> None:
    spec = AlgoSpec(advantage=f"{NS}/grpo_clipped")
    items = [SimpleNamespace(response_ids=torch.tensor([5, 6]), behaviour_logprobs=torch.zeros(2), offline=False, group_id=0)
             for _ in range(8)]  # fmt: skip
    outputs = [RewardOutput(s, {"accuracy": s}) for s in [1.0] + [0.0] * 7]
    advantages, _, keep = compute_advantages(spec, items, outputs)
    # GRPO: (x - 1/8) / unbiased std (sqrt(1/8)): 2.47 for the one right answer, clipped to 2
    assert keep == [True] * 8
    assert advantages[0].tolist() == pytest.approx([2.0, 2.0])
    assert advantages[1].tolist() == pytest.approx([-(0.125**0.5)] * 2, rel=1e-4)


@pytest.mark.parametrize(
    ("shift", "weight", "clipped"),
    [(0.0, 1.0, 0.0), (1.0, 1.28, 1.0)],  # ratio 1: weight 1; ratio e > 1 + clip_high: truncated to 1.28
)
def test_policy_loss_example_takes_the_learners_call(examples: dict, shift: float, weight: float, clipped: float) -> None:
    spec = AlgoSpec(policy_loss=f"{NS}/tis")
    loss_fn = POLICY_LOSSES[spec.policy_loss]
    logprobs = torch.full((2, 3), -1.0, requires_grad=True)
    mask = torch.ones(2, 3, dtype=torch.bool)
    advantages = torch.tensor([[1.0] * 3, [0.5] * 3])
    loss, metrics = loss_fn(  # the keywords of evr1.runner.learner.learner's call, behaviour/ref log-probs included
        logprobs, logprobs.detach() - shift, advantages, mask, spec=spec, normaliser=Normaliser.of(mask),
        offline=torch.zeros(2, dtype=torch.bool), entropy=torch.zeros(2, 3), kl_coef=None,
        behaviour_logprobs=torch.full((2, 3), float("nan")), ref_logprobs=torch.zeros(2, 3),
    )  # fmt: skip
    loss.backward()
    assert float(loss.detach()) == pytest.approx(-0.75 * weight)  # token mean of -A * weight
    assert logprobs.grad[0, 0] == pytest.approx(-weight / 6) and logprobs.grad[1, 0] == pytest.approx(-0.5 * weight / 6)
    assert float(metrics["clip_frac_high"]) == clipped


def test_sampler_example_samples_and_resumes(examples: dict) -> None:
    data = DataSpec(sampler=f"{NS}/video_first")
    modalities = ["image", "video", "text", "video"]
    sampler = SAMPLERS[data.sampler](modalities, seed=0, ratios=data.modality_ratio)
    assert sorted(sampler.sample(2)) == [1, 3] and sampler.sample(2) == [0, 2]
    resumed = SAMPLERS[data.sampler](modalities, seed=0, ratios=None)
    resumed.load_state_dict(sampler.state_dict())
    assert resumed.sample(3) == sampler.sample(3)
