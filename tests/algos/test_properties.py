"""Property tests: no NaN/Inf on degenerate inputs (equal rewards, size-1 groups, empty masks, extreme ratios)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.algos.aggregation import Normaliser
from evr1.registry import ADVANTAGES, POLICY_LOSSES
from evr1.specs import AlgoSpec

SPECS = {
    "grpo": AlgoSpec(),
    "rloo": AlgoSpec(advantage="rloo"),
    "reinforce_pp": AlgoSpec(advantage="reinforce_pp", gamma=0.9),
    "remax": AlgoSpec(advantage="remax"),
    "gdpo": AlgoSpec(advantage="gdpo"),
    "passk": AlgoSpec(advantage="passk", passk_k=3),
}
LOSS_SPECS = {
    "ppo_clip": AlgoSpec(dual_clip=3.0),
    "gspo": AlgoSpec(policy_loss="gspo", clip_low=3e-4, clip_high=4e-4),
    "gspo_token": AlgoSpec(policy_loss="gspo_token", clip_low=3e-4, clip_high=4e-4),
    "cispo": AlgoSpec(policy_loss="cispo", clip_low=1.0, clip_high=4.0),
    "reinforce": AlgoSpec(policy_loss="reinforce"),
}


@st.composite
def batches(draw):
    b = draw(st.integers(1, 8))
    t = draw(st.integers(1, 5))
    ids = draw(st.lists(st.integers(0, 3), min_size=b, max_size=b))
    pool = draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, -2.0, 1e6]), min_size=1, max_size=3))  # often all equal
    scores = draw(st.lists(st.sampled_from(pool), min_size=b, max_size=b))
    lengths = draw(st.lists(st.integers(0, t), min_size=b, max_size=b))  # 0 = empty row
    offline = draw(st.lists(st.booleans(), min_size=b, max_size=b))
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    return torch.tensor(scores, dtype=torch.float64), torch.tensor(ids), mask, torch.tensor(offline)


@pytest.mark.parametrize("name", sorted(SPECS))
@settings(max_examples=40, deadline=None)
@given(batch=batches(), in_baseline=st.booleans())
def test_advantages_stay_finite(name, batch, in_baseline):
    scores, ids, mask, offline = batch
    spec = SPECS[name]
    if name in ("grpo", "rloo", "gdpo", "passk"):
        spec = spec.model_copy(update={"offline": spec.offline.model_copy(update={"in_baseline": in_baseline})})
    extra = {"baselines": scores.flip(0)} if name == "remax" else {}
    given_scores = {"acc": scores, "fmt": scores.clamp(0, 1)} if name == "gdpo" else scores
    adv = ADVANTAGES.get(name)(given_scores, ids, mask, spec=spec, offline=offline, **extra)
    assert adv.shape == mask.shape and torch.isfinite(adv).all()
    assert (adv[~mask] == 0).all()
    if name in ("grpo", "rloo", "passk"):  # all-equal scores in a group: zero advantage
        for g in ids.unique():
            rows = ids == g
            if scores[rows].unique().numel() == 1:
                assert (adv[rows] == 0).all()


@pytest.mark.parametrize("name", sorted(LOSS_SPECS))
@settings(max_examples=30, deadline=None)
@given(
    batch=batches(),
    log_ratio=st.sampled_from([0.0, 1e-3, -50.0, 50.0, 1e4, -1e4]),
    logp=st.sampled_from([-1e-3, -1.0, -30.0, -1e4]),
    agg=st.sampled_from(["token_mean", "seq_mean_token_mean", "seq_mean_token_sum"]),
    behaviour_known=st.booleans(),
)
def test_losses_and_gradients_stay_finite(name, batch, log_ratio, logp, agg, behaviour_known):
    scores, _, mask, offline = batch
    spec = LOSS_SPECS[name].model_copy(update={"loss_agg": agg})
    logprobs = torch.full(mask.shape, logp, dtype=torch.float64)
    logprobs[~mask] = float("-inf")  # padding garbage must not leak into the loss or the gradient
    logprobs.requires_grad_()
    old = torch.full(mask.shape, logp - log_ratio, dtype=torch.float64)
    old[~mask] = float("nan")
    adv = scores[:, None].expand(mask.shape).clamp(-10, 10)
    behaviour = old.clone() if behaviour_known else None
    loss, metrics = POLICY_LOSSES.get(name)(
        logprobs, old, adv, mask, spec=spec, normaliser=Normaliser.of(mask), offline=offline, behaviour_logprobs=behaviour
    )
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logprobs.grad).all() and (logprobs.grad[~mask] == 0).all()
    assert all(torch.isfinite(v) for v in metrics.values())
    if not mask.any():
        assert loss.item() == 0.0
