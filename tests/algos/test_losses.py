"""Policy losses: hand-computed values and gradients, gradcheck, off-policy rows, metrics."""

from __future__ import annotations

import math

import pytest
import torch

from evr1.registry import POLICY_LOSSES
from evr1.specs import AlgoSpec, KLSpec, OffPolicySpec

from .helpers import call_loss, lp, t

GSPO = {"clip_low": 3e-4, "clip_high": 4e-4}


def spec_for(name: str, **kw) -> AlgoSpec:
    return AlgoSpec(policy_loss=name, **({**GSPO, **kw} if name.startswith("gspo") else kw))


def grad_of(loss: torch.Tensor, x: torch.Tensor) -> list[float]:
    (g,) = torch.autograd.grad(loss, x)
    return g.flatten().tolist()


def test_ppo_clip_by_hand():
    # ratios 1.5 (A=1: clipped high), 0.5 (A=-1: clipped low), 1.1 (A=-1), 0.7 (A=1)
    x = lp([[0.75, 0.25, 0.55, 0.35]])
    old = lp([[0.5, 0.5, 0.5, 0.5]]).detach()
    loss, m = call_loss("ppo_clip", x, old, t([[1, -1, -1, 1]]))
    assert loss.item() == pytest.approx((-1.28 + 0.8 + 1.1 - 0.7) / 4)
    assert grad_of(loss, x) == pytest.approx([0, 0, 1.1 / 4, -0.7 / 4])
    assert (m["clip_frac_low"].item(), m["clip_frac_high"].item()) == pytest.approx((0.25, 0.25))
    assert (m["ratio_min"].item(), m["ratio_max"].item(), m["ratio_mean"].item()) == pytest.approx((0.5, 1.5, 0.95))
    assert m["approx_kl"].item() == pytest.approx(sum(r - 1 - math.log(r) for r in (1.5, 0.5, 1.1, 0.7)) / 4)


def test_ppo_dual_clip_caps_negative_advantages():
    x = lp([[0.5, 0.2]])
    old = lp([[0.1, 0.1]]).detach()  # ratios 5 and 2, both A = -1
    loss, m = call_loss("ppo_clip", x, old, t([[-1, -1]]), spec=AlgoSpec(dual_clip=3.0))
    assert loss.item() == pytest.approx((3 + 2) / 2)
    assert grad_of(loss, x) == pytest.approx([0, 2 / 2])
    assert m["clip_frac_dual"].item() == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("dual_clip", "gradient"), [(3.0, 0.0), (None, 0.5 * math.exp(15))]  # 1.6e6 without the cap
)
def test_dual_clip_by_default_removes_the_gradient_of_an_exploded_negative_token(dual_clip, gradient):
    x = torch.tensor([[15.0]], dtype=torch.float64, requires_grad=True)  # log-ratio 15, A = -0.5
    loss, m = call_loss("ppo_clip", x, torch.zeros(1, 1, dtype=torch.float64), t([[-0.5]]),
                        spec=AlgoSpec(dual_clip=dual_clip))  # fmt: skip
    assert grad_of(loss, x) == pytest.approx([gradient])
    assert loss.item() == pytest.approx(0.5 * (3.0 if dual_clip else math.exp(15)))
    assert m.get("clip_frac_dual", torch.tensor(0.0)).item() == (1.0 if dual_clip else 0.0)


@pytest.mark.parametrize("name", ["gspo", "gspo_token"])
def test_gspo_dual_clip_caps_negative_rows(name):
    # row 0: s = e^2 > 3, A = -1: loss capped at 3, no gradient; row 1: s = e^0.5 < 3, loss -A s with gradient
    x = torch.tensor([[2.0, 2.0], [0.5, 0.5]], dtype=torch.float64, requires_grad=True)
    old = torch.zeros(2, 2, dtype=torch.float64)
    spec = spec_for(name, loss_agg="seq_mean_token_mean", dual_clip=3.0)
    loss, m = call_loss(name, x, old, t([[-1, -1], [-1, -1]]), spec=spec)
    assert loss.item() == pytest.approx((3.0 + math.exp(0.5)) / 2)
    assert grad_of(loss, x) == pytest.approx([0, 0, math.exp(0.5) / 4, math.exp(0.5) / 4])
    assert m["clip_frac_dual"].item() == pytest.approx(0.5)


def test_gspo_clips_the_sequence_ratio():
    x = torch.tensor([[0.001, 0.003], [-1e-4, 1e-4]], dtype=torch.float64, requires_grad=True)
    old = torch.zeros(2, 2, dtype=torch.float64)
    loss, m = call_loss("gspo", x, old, t([[1, 1], [2, 2]]), spec=spec_for("gspo", loss_agg="seq_mean_token_mean"))
    # row 0: s = e^0.002 > 1 + 4e-4, A > 0: clipped, no gradient; row 1: s = 1, loss -2, d/dx = -2 * 1 / 2 per token
    assert loss.item() == pytest.approx((-1.0004 - 2.0) / 2)
    assert grad_of(loss, x) == pytest.approx([0, 0, -0.5, -0.5])
    assert m["clip_frac_high"].item() == pytest.approx(0.5)
    assert m["ratio_max"].item() == pytest.approx(math.exp(0.002))


def test_gspo_token_equals_gspo_for_row_constant_advantages():
    torch.manual_seed(0)
    x = (0.002 * torch.randn(3, 5, dtype=torch.float64)).requires_grad_()
    adv = torch.randn(3, 1, dtype=torch.float64).expand(3, 5)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    out = {}
    for name in ("gspo", "gspo_token"):
        loss, _ = call_loss(name, x, torch.zeros_like(x), adv, mask, spec=spec_for(name, loss_agg="seq_mean_token_mean"))
        out[name] = (loss.item(), grad_of(loss, x))
    assert out["gspo"][0] == pytest.approx(out["gspo_token"][0])
    torch.testing.assert_close(t(out["gspo"][1]), t(out["gspo_token"][1]))


def test_cispo_keeps_gradients_of_truncated_tokens():
    x = lp([[0.8, 0.2]])
    old = lp([[0.4, 0.4]]).detach()  # ratios 2 (weight truncated to 1.28) and 0.5 (no lower bound)
    loss, m = call_loss("cispo", x, old, t([[1, 1]]), spec=AlgoSpec(policy_loss="cispo", clip_low=1.0))
    assert loss.item() == pytest.approx((-1.28 - 0.5) / 2)
    assert grad_of(loss, x) == pytest.approx([-1.28 / 2, -0.5 / 2])
    assert (m["clip_frac_high"].item(), m["clip_frac_low"].item()) == pytest.approx((0.5, 0.0))


def test_reinforce_is_the_plain_policy_gradient():
    x = lp([[0.3, 0.6]])
    loss, m = call_loss("reinforce", x, x.detach(), t([[2, -1]]))
    assert loss.item() == pytest.approx((-2 + 1) / 2)
    assert grad_of(loss, x) == pytest.approx([-1.0, 0.5])
    assert m["clip_frac_low"].item() == m["clip_frac_high"].item() == 0


MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=torch.bool)
OFFLINE = torch.tensor([False, False, True])  # row 2: unknown behaviour, LUFFY shaping


def random_inputs(scale: float, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    old = -1.0 + scale * torch.randn(3, 4, dtype=torch.float64)
    x = (old + scale * torch.randn(3, 4, dtype=torch.float64)).requires_grad_()
    return x, old, torch.randn(3, 4, dtype=torch.float64)


@pytest.mark.parametrize("name", ["ppo_clip", "gspo", "reinforce"])  # losses whose gradient is that of their value
@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"])
def test_gradcheck(name, agg):
    x, old, adv = random_inputs(0.002 if name == "gspo" else 0.3)
    spec = spec_for(name, loss_agg=agg, loss_agg_constant=8.0 if agg == "constant" else None, entropy_coef=0.01)
    entropy = torch.rand(3, 4, dtype=torch.float64)

    def f(logprobs):
        return call_loss(name, logprobs, old, adv, MASK, spec=spec, offline=OFFLINE, entropy=entropy)[0]

    assert torch.autograd.gradcheck(f, (x,), eps=1e-7, atol=1e-6)


def shaping_grad(x: torch.Tensor, adv: torch.Tensor, gamma: float = 0.1) -> torch.Tensor:
    p = x.detach().exp()
    return -adv * gamma * p / (p + gamma) ** 2


@pytest.mark.parametrize("name", ["gspo_token", "cispo"])  # stop-gradient losses: closed-form gradients
def test_stop_gradient_losses_closed_form(name):
    x, old, adv = random_inputs(0.002 if name == "gspo_token" else 0.5)
    loss, _ = call_loss(name, x, old, adv, MASK, spec=spec_for(name), offline=OFFLINE)
    log_r = (x.detach() - old) * MASK
    if name == "gspo_token":  # d/dlogp_t = -A_t * s (unless clipped), s = exp(mean_t log r_t)
        s = (log_r.sum(-1) / MASK.sum(-1)).exp()[:, None].expand(3, 4)
        clipped = ((adv > 0) & (s > 1 + 4e-4)) | ((adv < 0) & (s < 1 - 3e-4))
        per_token = torch.where(clipped, torch.zeros_like(adv), -adv * s)
    else:  # d/dlogp_t = -A_t * clip(r_t, 0.8, 1.28)
        per_token = -adv * log_r.exp().clamp(0.8, 1.28)
    per_token = torch.where(OFFLINE[:, None], shaping_grad(x, adv), per_token) * MASK
    (grad,) = torch.autograd.grad(loss, x)
    torch.testing.assert_close(grad, per_token / MASK.sum())
    assert (grad[~MASK] == 0).all()


def test_offline_rows_with_unknown_behaviour_are_shaped_not_clipped():
    x = lp([[0.4]])
    far_old = torch.full((1, 1), -10.0, dtype=torch.float64)  # as on-policy this would be clipped away
    loss, m = call_loss("ppo_clip", x, far_old, t([[1.0]]), offline=torch.tensor([True]))
    assert loss.item() == pytest.approx(-0.4 / 0.5)  # f(p) = p / (p + 0.1)
    assert grad_of(loss, x) == pytest.approx([-0.1 * 0.4 / 0.5**2])  # A * gamma * p / (p + gamma)^2
    assert m["offline_token_frac"].item() == 1.0 and m["ratio_mean"].item() == 1.0  # no ratio tokens


def test_offline_unit_weight_and_loss_weight():
    x = lp([[0.4], [0.5]])
    old = lp([[0.5], [0.5]]).detach()
    spec = AlgoSpec(offline=OffPolicySpec(unknown_behaviour="unit_weight", loss_weight=0.5))
    loss, m = call_loss("ppo_clip", x, old, t([[1.0], [1.0]]), spec=spec, offline=torch.tensor([True, False]))
    assert loss.item() == pytest.approx((0.5 * -math.log(0.4) - 1.0) / 2)
    assert grad_of(loss, x) == pytest.approx([-0.5 / 2, -1.0 / 2])
    assert m["offline_token_frac"].item() == 0.5
    # the two rows' separate contributions, which add up to the policy loss
    assert m["pg_loss_offline"].item() == pytest.approx(0.5 * -math.log(0.4) / 2)
    assert m["pg_loss_online"].item() == pytest.approx(-1.0 / 2)
    assert (m["pg_loss_offline"] + m["pg_loss_online"]).item() == pytest.approx(m["pg_loss"].item())


def test_known_behaviour_logprobs_are_the_ratio_denominator():
    x = lp([[0.5], [0.5]])
    old = x.detach()  # the current policy: would give ratio 1
    behaviour = torch.tensor([[math.log(0.25)], [float("nan")]], dtype=torch.float64)  # row 1 unknown
    loss, m = call_loss("ppo_clip", x, old, t([[1.0], [1.0]]), offline=torch.tensor([True, True]), behaviour_logprobs=behaviour)
    # row 0: ratio 0.5/0.25 = 2 -> clipped at 1.28; row 1: shaping 0.5/0.6
    assert loss.item() == pytest.approx((-1.28 - 0.5 / 0.6) / 2)
    # pi/mu is reported apart from the online drift diagnostics (no online row here)
    assert m["offline/clip_frac_high"].item() == 1.0 and m["offline/ratio_max"].item() == pytest.approx(2.0)
    assert m["clip_frac_high"].item() == 0.0 and m["ratio_max"].item() == 1.0
    with pytest.raises(ValueError, match="offline mask"):
        call_loss("ppo_clip", x, old, t([[1.0], [1.0]]), behaviour_logprobs=behaviour)
    # NaN on padding does not make a row unknown
    x2 = lp([[0.5, 0.5]])
    padded = torch.tensor([[math.log(0.25), float("nan")]], dtype=torch.float64)
    mask = torch.tensor([[True, False]])
    loss, _ = call_loss("ppo_clip", x2, x2.detach(), t([[1.0, 1.0]]), mask, offline=torch.tensor([True]), behaviour_logprobs=padded)
    assert loss.item() == pytest.approx(-1.28)


def test_entropy_bonus_and_kl_term():
    x = lp([[0.5, 0.25]])
    ref = lp([[0.25, 0.25]]).detach()  # d = ln 2, 0 -> k3 = 0.5 - 1 + ln 2, 0
    entropy = t([[1.0, 3.0]])
    spec = AlgoSpec(entropy_coef=0.1, kl=KLSpec(enabled=True, coef=0.5))
    loss, m = call_loss("reinforce", x, x.detach(), t([[0.0, 0.0]]), spec=spec, entropy=entropy, ref_logprobs=ref)
    k3 = 0.5 - 1 + math.log(2)
    assert loss.item() == pytest.approx(-0.1 * 2.0 + 0.5 * k3 / 2)
    assert m["entropy"].item() == 2.0 and m["kl"].item() == pytest.approx(k3 / 2)
    loss2, _ = call_loss("reinforce", x, x.detach(), t([[0.0, 0.0]]), spec=spec, entropy=entropy, ref_logprobs=ref, kl_coef=1.0)
    assert loss2.item() == pytest.approx(-0.2 + k3 / 2)


def test_misconfigured_calls_raise():
    x = lp([[0.5]])
    zero = t([[0.0]])
    with pytest.raises(ValueError, match="entropy"):
        call_loss("ppo_clip", x, x.detach(), zero, spec=AlgoSpec(entropy_coef=0.1))
    with pytest.raises(ValueError, match="reference model"):
        call_loss("ppo_clip", x, x.detach(), zero, spec=AlgoSpec(kl=KLSpec(enabled=True, coef=0.1)))
    with pytest.raises(ValueError, match="kl_coef"):
        call_loss("ppo_clip", x, x.detach(), zero, kl_coef=0.1)
    with pytest.raises(ValueError, match="shape"):
        call_loss("ppo_clip", x, x.detach(), t([[0.0, 1.0]]))


@pytest.mark.parametrize("name", ["ppo_clip", "gspo", "gspo_token", "cispo", "reinforce"])
def test_every_loss_reports_the_metrics(name):
    x = lp([[0.5, 0.4]])
    _, m = call_loss(name, x, x.detach(), t([[1.0, -1.0]]), spec=spec_for(name), entropy=t([[1.0, 1.0]]))
    assert {"pg_loss", "clip_frac_low", "clip_frac_high", "approx_kl", "ratio_mean", "ratio_min", "ratio_max", "entropy"} <= set(m)
    assert all(not v.requires_grad and torch.isfinite(v) for v in m.values())
    assert name in POLICY_LOSSES
