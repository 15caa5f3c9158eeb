"""The algorithm: advantage estimator, policy loss, KL, off-policy correction, dynamic sampling."""

from __future__ import annotations

import warnings
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from evr1.specs.base import PositiveInt, RegistryName, Spec
from evr1.specs.rollout_correction import RolloutCorrectionSpec


class KLSpec(Spec):
    """KL regularisation against a reference model (off by default).

    A loss term (`coef * KL`, aggregated like the policy loss) or, with `as_reward_penalty`, a
    per-token penalty subtracted from the rewards before the advantage estimator; never both.
    Per-token estimates are clamped to [-clamp, clamp]. With `target` the coefficient adapts
    (Ziegler et al. 2019): it starts at `coef` and moves by at most 20% per `horizon` samples.
    """

    enabled: bool = False
    estimator: Literal["k1", "k2", "k3", "abs"] = "k3"
    coef: Annotated[float, Field(ge=0)] = 0.0
    as_reward_penalty: bool = False
    clamp: Annotated[float, Field(gt=0)] = 10.0
    target: Annotated[float, Field(gt=0)] | None = None
    horizon: PositiveInt = 10_000

    @model_validator(mode="after")
    def _not_inert(self) -> KLSpec:
        if self.enabled and self.coef == 0:
            raise ValueError("KL is enabled with coef 0, which does nothing: set coef > 0 (the start value if target is set)")
        if not self.enabled:
            stray = [f for f, off in (("coef", 0.0), ("as_reward_penalty", False), ("target", None)) if getattr(self, f) != off]
            if stray:
                raise ValueError(f"{', '.join(stray)} set but KL is not enabled: set enabled=True or leave them unset")
        return self


class OffPolicySpec(Spec):
    """How off-policy rows are trained: offline responses in mixed groups, and stale online rows.

    Offline rows with known behaviour log-probs use them as the importance-ratio denominator and
    are clipped like online rows. Rows without use `unknown_behaviour`: "shaping" (LUFFY):
    per-token objective A*f(p), f(p) = p/(p + shaping_gamma), no clipping; "unit_weight":
    importance weight 1, objective A*log p, no clipping. `loss_weight` scales the policy-gradient
    term of every offline row. `in_baseline`: offline rewards count in the group baseline
    (otherwise the baseline, the mean, is over online rows only and offline rows are scored against
    it; the std scale stays over every row of the group, so advantages stay bounded).

    Stale online rows (sampled by weights `staleness > 0` versions old: pipelined rollouts) are
    trained with decoupled PPO (`evr1.algos.offpolicy`, docs/off_policy.md): the loss clips
    pi/pi_prox, pi_prox the learner's recomputed old log-probs, and with `behaviour_weight`
    multiplies each token's term by the detached w = min(pi_prox/mu, `behaviour_weight_cap`), mu
    the rollout's log-prob (w = 1 where mu is unknown). `behaviour_weight=False` trains them as if sampled by pi_prox. The cap
    bounds a token's weight at cap times its on-policy one (default 2), so a token the old policy
    sampled at a probability far below today's cannot dominate the step (bounded variance, at a
    small bias where it bites); one step of staleness keeps most weights near 1, and
    `stale/weight_truncated_frac` reports how often the cap bites. Truncating keeps such a token
    in the gradient at the cap (AReaL drops tokens above it instead); a cap below 1 would
    down-weight tokens on which both policies agree, so it is at least 1.
    """

    unknown_behaviour: Literal["shaping", "unit_weight"] = "shaping"
    shaping_gamma: Annotated[float, Field(gt=0)] = 0.1
    loss_weight: Annotated[float, Field(ge=0)] = 1.0
    in_baseline: bool = True
    behaviour_weight: bool = True
    behaviour_weight_cap: Annotated[float, Field(ge=1)] = 2.0

    @model_validator(mode="after")
    def _not_inert(self) -> OffPolicySpec:
        if self.unknown_behaviour != "shaping" and self.shaping_gamma != 0.1:
            raise ValueError(f"shaping_gamma is only used with unknown_behaviour='shaping' (got {self.unknown_behaviour!r})")
        if not self.behaviour_weight and self.behaviour_weight_cap != 2.0:
            raise ValueError("behaviour_weight_cap is only used with behaviour_weight=True")
        return self


class DynamicSamplingSpec(Spec):
    """DAPO dynamic sampling: keep groups whose mean `metric` lies strictly inside (low, high)."""

    metric: str = "accuracy"
    low: float = 0.0
    high: float = 1.0

    @model_validator(mode="after")
    def _range(self) -> DynamicSamplingSpec:
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be smaller than high ({self.high}): no group could be kept")
        return self


class OverlongSpec(Spec):
    """DAPO overlong shaping: a penalty growing linearly to `penalty` over the last `buffer` tokens."""

    buffer: PositiveInt
    penalty: Annotated[float, Field(gt=0)] = 1.0


_GROUP_SCALED = ("grpo", "gdpo", "passk")
_GROUP_BASELINES = ("grpo", "rloo", "gdpo", "passk", "reinforce_pp_baseline")


class AlgoSpec(Spec):
    """The RL algorithm: advantage estimator, policy loss and its clipping, aggregation, KL.

    Built-in estimators (`evr1/algos/advantages.py`): grpo, rloo, reinforce_pp, reinforce_pp_baseline
    (REINFORCE++ with a group-mean baseline, then whitened over the batch's tokens), remax, gdpo, passk.
    `clip_low`/`clip_high` bound the ratio the policy loss uses: the token ratio for `ppo_clip`
    ([1-clip_low, 1+clip_high]; asymmetric = DAPO clip-higher), the length-normalised sequence
    ratio for `gspo`/`gspo_token` (the paper's 3e-4/4e-4; wider ranges are warned about, not
    refused: that ratio leaves 1 by far more than 1e-3 once the policy moves), the stop-gradient
    importance weight for `cispo` (clip_low=1: no lower bound). `reinforce` does not clip.
    `dual_clip` c (default 3, as verl and EasyR1) caps the loss of a negative-advantage token at
    c*|A| in the clipped losses (`ppo_clip`, `gspo`, `gspo_token`), so a token whose ratio exploded
    (log-ratio 15: gradient 3.3e6*|A| without the cap) gets no gradient; None turns it off. `cispo`
    (its weight is capped at 1+clip_high) and `reinforce` (unclipped by definition) do not read it.
    Other options of one built-in estimator or loss are errors with another (they would do nothing).
    `rollout_correction`: the engine–learner mismatch correction on online rows (`RolloutCorrectionSpec`),
    or the name of a preset in the `rollout_corrections` registry (`token_tis`, `seq_mis`, ...).
    """

    advantage: RegistryName("advantages") = "grpo"
    scale_std: bool = True  # grpo/gdpo/passk divide by the group std; False: Dr. GRPO
    gamma: Annotated[float, Field(gt=0, le=1)] = 1.0  # reinforce_pp discount
    passk_k: PositiveInt | None = None  # passk: the k of pass@k (required there)
    key_weights: dict[str, float] = {}  # gdpo: weight of each normalised reward key (default 1)
    policy_loss: RegistryName("policy_losses") = "ppo_clip"
    clip_low: Annotated[float, Field(ge=0)] = 0.2
    clip_high: Annotated[float, Field(ge=0)] = 0.28
    dual_clip: float | None = 3.0  # clipped losses: cap the loss of negative-advantage tokens at dual_clip*|A|
    log_ratio_clamp: Annotated[float, Field(gt=0)] = 20.0
    loss_agg: Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "constant"] = "token_mean"
    loss_agg_constant: Annotated[float, Field(gt=0)] | None = None  # "constant": tokens per sequence (Dr. GRPO)
    offline: OffPolicySpec = Field(default_factory=OffPolicySpec)
    kl: KLSpec = Field(default_factory=KLSpec)
    entropy_coef: float = 0.0
    dynamic_sampling: DynamicSamplingSpec | None = None
    overlong: OverlongSpec | None = None
    rollout_correction: RolloutCorrectionSpec = Field(default_factory=RolloutCorrectionSpec)

    @field_validator("rollout_correction", mode="before")
    @classmethod
    def _preset(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        from evr1.registry import ROLLOUT_CORRECTIONS, UnknownNameError

        try:
            return ROLLOUT_CORRECTIONS.get(value)()
        except UnknownNameError as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _coherent(self) -> AlgoSpec:
        if (self.loss_agg == "constant") != (self.loss_agg_constant is not None):
            raise ValueError("loss_agg='constant' needs loss_agg_constant (and loss_agg_constant needs loss_agg='constant')")
        if self.dual_clip is not None and self.dual_clip <= 1:
            raise ValueError(f"dual_clip must be > 1 (it caps negative-advantage losses at ratio dual_clip), got {self.dual_clip}")
        self._check_advantage_options()
        self._check_loss_options()
        return self

    def _check_advantage_options(self) -> None:
        adv = self.advantage
        if "/" in adv:  # a plugin: we cannot know which options it reads
            return
        if not self.scale_std and adv not in _GROUP_SCALED:
            raise ValueError(f"scale_std=False only applies to {', '.join(_GROUP_SCALED)}, not {adv!r}")
        if self.gamma != 1.0 and adv != "reinforce_pp":
            raise ValueError(f"gamma only applies to reinforce_pp, not {adv!r}")
        if (self.passk_k is not None) != (adv == "passk"):
            raise ValueError("advantage='passk' needs passk_k, and passk_k only applies to passk")
        if self.key_weights and adv != "gdpo":
            raise ValueError(f"key_weights only applies to gdpo, not {adv!r}")
        if adv == "gdpo" and (self.overlong is not None or self.kl.as_reward_penalty):
            shaping = "overlong shaping" if self.overlong is not None else "the KL reward penalty (kl.as_reward_penalty)"
            raise ValueError(
                f"gdpo normalises each reward key separately and never sees the combined score, so {shaping} "
                "would do nothing: use it with another estimator, or a KL loss term (kl.as_reward_penalty=False)"
            )
        if not self.offline.in_baseline and adv not in _GROUP_BASELINES:
            names = ", ".join(_GROUP_BASELINES)
            raise ValueError(f"offline.in_baseline=False only applies to group baselines ({names}), not {adv!r}")

    def _check_loss_options(self) -> None:
        loss = self.policy_loss
        if "/" in loss:
            return
        if loss in ("ppo_clip", "gspo", "gspo_token") and self.clip_low >= 1:
            raise ValueError(f"clip_low must be < 1 for {loss} (the ratio bound 1-clip_low would be <= 0)")
        if loss == "cispo" and self.clip_low > 1:
            raise ValueError("clip_low must be <= 1 for cispo (1 = no lower bound on the importance weight)")
        if loss in ("gspo", "gspo_token") and max(self.clip_low, self.clip_high) > 0.01:
            warnings.warn(
                f"{loss} clips the length-normalised sequence ratio; the GSPO paper uses clip_low/clip_high 3e-4/4e-4, "
                f"and {self.clip_low}/{self.clip_high} clips only rows whose ratio moved that far",
                UserWarning,
                stacklevel=2,
            )
