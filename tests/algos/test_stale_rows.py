"""Stale online rows (pipelined rollouts): decoupled PPO, the clipped ratio pi/pi_prox times the detached
truncated weight w = min(pi_prox/mu, cap); staleness-0 rows exactly as without staleness."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.algos.aggregation import Normaliser
from evr1.algos.offpolicy import TokenKinds, behaviour_weights
from evr1.specs import AlgoSpec, OffPolicySpec

from .helpers import call_loss, lp, t

NAN = float("nan")
ONLINE = torch.tensor([False])
STALE = torch.tensor([1])


def logs(values) -> torch.Tensor:
    """Float64 log-probs (no gradient) from probabilities; NaN stays NaN (unknown behaviour)."""
    return torch.tensor([[NAN if math.isnan(v) else math.log(v) for v in row] for row in values], dtype=torch.float64)


def test_weights_by_hand() -> None:
    # rows: stale online; fresh online (mu far from pi_prox, must not matter); offline with staleness 1
    # (trained against mu by its ratio, never weighted); stale online with two padding tokens
    prox = logs([[0.6, 0.3, 0.1, 0.5], [0.5] * 4, [0.5] * 4, [0.3, 0.3, 0.9, 0.9]])
    mu = logs([[0.2, 0.2, 0.4, NAN], [0.01] * 4, [0.01] * 4, [0.6, 0.3, 0.1, NAN]])
    mask = torch.tensor([[True] * 4, [True] * 4, [True] * 4, [True, True, False, False]])
    kinds = TokenKinds.of(torch.tensor([False, False, True, False]), mu, mask, torch.tensor([1, 0, 1, 2]))
    assert kinds.stale.tolist() == [True, False, False, True]
    assert kinds.stale_known.tolist() == [[True, True, True, False], [False] * 4, [False] * 4, [True, True, False, False]]
    weights = behaviour_weights(prox, mu, kinds, OffPolicySpec())
    # row 0: 0.6/0.2 = 3 -> the cap 2; 0.3/0.2 = 1.5; 0.1/0.4 = 0.25; NaN mu -> 1. Row 3: 0.3/0.6, 0.3/0.3, padding 1
    expected = [[2.0, 1.5, 0.25, 1.0], [1.0] * 4, [1.0] * 4, [0.5, 1.0, 1.0, 1.0]]
    assert torch.allclose(weights.value, t(expected))
    assert weights.truncated.tolist() == [[True, False, False, False], [False] * 4, [False] * 4, [False] * 4]
    wide = behaviour_weights(prox, mu, kinds, OffPolicySpec(behaviour_weight_cap=5.0))
    assert wide.value[0].tolist() == pytest.approx([3.0, 1.5, 0.25, 1.0]) and not wide.truncated.any()
    assert behaviour_weights(prox, mu, kinds, OffPolicySpec(behaviour_weight=False)) is None
    assert behaviour_weights(prox, mu, TokenKinds.of(kinds.offline, mu, mask), OffPolicySpec()) is None  # no staleness


def test_weight_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="behaviour_weight_cap is only used with behaviour_weight=True"):
        OffPolicySpec(behaviour_weight=False, behaviour_weight_cap=3.0)
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        OffPolicySpec(behaviour_weight_cap=0.5)
    with pytest.raises(ValueError, match=r"staleness must be a tensor \[B=1\]"):
        TokenKinds.of(ONLINE, None, torch.ones(1, 2, dtype=torch.bool), torch.tensor([1, 1]))


GSPO = {"clip_low": 3e-4, "clip_high": 4e-4}
# one stale row of two tokens: pi, pi_prox, mu (probabilities), the advantage of both tokens; the loss and
# d loss / d log pi. Unless said otherwise mu = [0.1, 0.4] -> w = [min(pi_prox/mu) = min(4, 2), 1.25] at
# pi_prox = [0.4, 0.5], and the token mean divides by 2.
CASES = [
    # ppo_clip (DAPO clip-higher [0.8, 1.28]): r = [1.25, 1] inside -> -A r w = [-2.5, -1.25]; grad -A r w / 2
    ("ppo_clip", {}, [0.5, 0.5], [0.4, 0.5], 1.0, -1.875, [-1.25, -0.625]),
    # A < 0: max(-A r, -A clip(r)) = r (below the dual-clip cap 3) times w
    ("ppo_clip", {}, [0.5, 0.5], [0.4, 0.5], -1.0, 1.875, [1.25, 0.625]),
    # r = 0.6/0.4 = 1.5 > 1.28: -1.28 w = -2.56, no gradient; token 1 as above
    ("ppo_clip", {}, [0.6, 0.5], [0.4, 0.5], 1.0, (-2.56 - 1.25) / 2, [0.0, -0.625]),
    # GRPO's symmetric [0.8, 1.2]: r = 1.25 clipped to 1.2 -> -2.4, no gradient
    ("ppo_clip", {"clip_high": 0.2}, [0.5, 0.5], [0.4, 0.5], 1.0, (-2.4 - 1.25) / 2, [0.0, -0.625]),
    # reinforce: -A r w unclipped = [-3, -1.25]
    ("reinforce", {}, [0.6, 0.5], [0.4, 0.5], 1.0, -2.125, [-1.5, -0.625]),
    # cispo [0.8, 1.2]: -sg(clip(r)) w A log p: value [-2.4, -1.25], every token keeps its gradient
    ("cispo", {"clip_high": 0.2}, [0.6, 0.5], [0.4, 0.5], 1.0, (-2.4 - 1.25) / 2, [-1.2, -0.625]),
    # gspo at pi = pi_prox: sequence ratio s = 1, token terms -A s w = [-2, -1.25]; ds/dlog pi_t = s/2, so
    # every token's gradient is -A mean(w) / 2 = -1.625 / 2
    ("gspo", GSPO, [0.4, 0.5], [0.4, 0.5], 1.0, -1.625, [-0.8125, -0.8125]),
    # gspo_token: the same value; token t's gradient is -A s w_t / 2
    ("gspo_token", GSPO, [0.4, 0.5], [0.4, 0.5], 1.0, -1.625, [-1.0, -0.625]),
]


@pytest.mark.parametrize(("name", "extra", "pi", "prox", "adv", "loss", "grad"), CASES)
def test_decoupled_loss_by_hand(name, extra, pi, prox, adv, loss, grad) -> None:
    x = lp([pi])
    old = logs([prox]).requires_grad_()
    mu = logs([[0.1, 0.4]]).requires_grad_()
    spec = AlgoSpec(policy_loss=name, **extra)
    got, metrics = call_loss(name, x, old, t([[adv, adv]]), spec=spec, offline=ONLINE, behaviour_logprobs=mu, staleness=STALE)
    got.backward()
    assert got.item() == pytest.approx(loss)
    assert x.grad[0].tolist() == pytest.approx(grad)
    assert old.grad is None and mu.grad is None  # w (and the ratio's denominator) are detached
    assert float(metrics["stale/weight_mean"]) == pytest.approx(1.625)
    assert float(metrics["stale/weight_max"]) == pytest.approx(2.0)
    assert float(metrics["stale/weight_truncated_frac"]) == pytest.approx(0.5)


def test_ratio_metrics_are_against_the_proximal_policy() -> None:
    x = lp([[0.5, 0.5]])
    _, metrics = call_loss(
        "ppo_clip", x, logs([[0.4, 0.5]]), t([[1.0, 1.0]]), offline=ONLINE, behaviour_logprobs=logs([[0.1, 0.4]]),
        staleness=STALE,
    )  # fmt: skip
    assert float(metrics["ratio_max"]) == pytest.approx(1.25) and float(metrics["ratio_mean"]) == pytest.approx(1.125)


def test_unknown_behaviour_gets_weight_one_and_no_weight_metrics_without_known_tokens() -> None:
    x = lp([[0.5, 0.5]])
    loss, metrics = call_loss(
        "ppo_clip", x, logs([[0.4, 0.5]]), t([[1.0, 1.0]]), offline=ONLINE, behaviour_logprobs=logs([[NAN, NAN]]),
        staleness=STALE,
    )  # fmt: skip
    assert loss.item() == pytest.approx((-1.25 - 1.0) / 2)  # plain PPO against pi_prox
    assert not any(name.startswith("stale/") for name in metrics)


def test_the_weight_can_be_switched_off() -> None:
    x = lp([[0.5, 0.5]])
    spec = AlgoSpec(offline=OffPolicySpec(behaviour_weight=False))
    loss, metrics = call_loss(
        "ppo_clip", x, logs([[0.4, 0.5]]), t([[1.0, 1.0]]), spec=spec, offline=ONLINE,
        behaviour_logprobs=logs([[0.1, 0.4]]), staleness=STALE,
    )  # fmt: skip
    assert loss.item() == pytest.approx((-1.25 - 1.0) / 2)
    assert not any(name.startswith("stale/") for name in metrics)


LOSS_SPECS = {
    "ppo_clip": AlgoSpec(),
    "gspo": AlgoSpec(policy_loss="gspo", **GSPO),
    "gspo_token": AlgoSpec(policy_loss="gspo_token", **GSPO),
    "cispo": AlgoSpec(policy_loss="cispo", clip_low=1.0, clip_high=4.0),
    "reinforce": AlgoSpec(policy_loss="reinforce"),
}


def _run(name: str, batch: dict, staleness: torch.Tensor | None, cap: float = 2.0):
    spec = LOSS_SPECS[name]
    spec = spec.model_copy(update={"offline": OffPolicySpec(behaviour_weight_cap=cap)})
    x = batch["logprobs"].clone().requires_grad_()
    extra = {} if staleness is None else {"staleness": staleness}
    loss, metrics = call_loss(
        name, x, batch["old"], batch["adv"], batch["mask"], spec=spec, normaliser=Normaliser.of(batch["mask"]),
        offline=batch["offline"], behaviour_logprobs=batch["mu"], **extra,
    )  # fmt: skip
    (grad,) = torch.autograd.grad(loss, x)
    return loss.detach(), grad, metrics


@st.composite
def batches(draw):
    b, width = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    values = st.floats(-6.0, -0.01, allow_nan=False)
    lists = [draw(st.lists(values, min_size=b * width, max_size=b * width)) for _ in range(3)]
    unknown = draw(st.lists(st.booleans(), min_size=b * width, max_size=b * width))
    lengths = draw(st.lists(st.integers(0, width), min_size=b, max_size=b))
    logprobs, old, mu = (torch.tensor(v, dtype=torch.float64).view(b, width) for v in lists)
    return {
        "logprobs": logprobs,
        "old": old,
        "mu": torch.where(torch.tensor(unknown).view(b, width), NAN, mu),
        "adv": torch.tensor(draw(st.lists(st.floats(-2, 2), min_size=b, max_size=b)), dtype=torch.float64)[:, None]
        .expand(b, width),
        "mask": torch.arange(width)[None, :] < torch.tensor(lengths)[:, None],
        "offline": torch.tensor(draw(st.lists(st.booleans(), min_size=b, max_size=b))),
        "staleness": torch.tensor(draw(st.lists(st.sampled_from([0, 0, 1, 3]), min_size=b, max_size=b))),
    }


@pytest.mark.parametrize("name", sorted(LOSS_SPECS))
@settings(max_examples=25, deadline=None)
@given(batch=batches(), cap=st.sampled_from([1.0, 2.0, 5.0]))
def test_weights_are_bounded_and_fresh_rows_unchanged(name, batch, cap) -> None:
    kinds = TokenKinds.of(batch["offline"], batch["mu"], batch["mask"], batch["staleness"])
    weights = behaviour_weights(batch["old"], batch["mu"], kinds, OffPolicySpec(behaviour_weight_cap=cap))
    if weights is not None:
        assert bool(((weights.value >= 0) & (weights.value <= cap)).all())
        assert bool((weights.value[~kinds.stale_known] == 1).all()) and not (weights.truncated & ~kinds.stale_known).any()
    plain_loss, plain_grad, plain_metrics = _run(name, batch, None, cap)
    zero_loss, zero_grad, zero_metrics = _run(name, batch, torch.zeros_like(batch["staleness"]), cap)
    # staleness 0 everywhere is bitwise the loss without staleness (NaN compared as equal: empty batches)
    assert torch.equal(plain_loss, zero_loss) or (plain_loss.isnan() and zero_loss.isnan())
    assert torch.equal(plain_grad, zero_grad) and plain_metrics.keys() == zero_metrics.keys()
    _, grad, _ = _run(name, batch, batch["staleness"], cap)
    fresh = ~kinds.stale  # rows are independent given the normaliser: a fresh row's gradient is untouched
    assert torch.equal(grad[fresh], plain_grad[fresh])
