"""Rollout correction: the engine–learner mismatch on online rows, corrected as verl's Rollout Correction does.

The rollout engine and the learner do not compute the same probabilities for the same weights
(kernels, precision, backend: vLLM in bf16 against a learner in fp32). evr1 measures the gap at
every step and can correct it inside its decoupled-PPO decomposition (`evr1.algos.rollout_correction`,
docs/off_policy.md): the importance weight and the rejection tests use the per-token log-ratio
`lr = log pi_prox - log mu` on online rows, `pi_prox` the learner's old log-probs and `mu` the
engine's own. The rules follow verl (volcengine/verl `verl/trainer/ppo/rollout_corr_helper.py` at
b178a3cd; the geometric mode and the veto at v0.7.0, f9c855f7).
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from evr1.specs.base import PositiveFloat, Spec

RejectionStatistic = Literal[
    "token_k1", "token_k2", "token_k3",
    "seq_sum_k1", "seq_sum_k2", "seq_sum_k3",
    "seq_mean_k1", "seq_mean_k2", "seq_mean_k3",
    "seq_max_k2", "seq_max_k3",
    "geometric",
]  # fmt: skip

_RATIO_BOUNDED = ("token_k1", "seq_sum_k1", "seq_mean_k1", "geometric")


class RejectionRule(Spec):
    """Reject (drop from the loss) the tokens or whole sequences whose divergence statistic is out of bounds.

    Per token, with `lr = log pi_prox - log mu`: `k1 = -lr`, `k2 = lr^2 / 2`, `k3 = exp(lr) - 1 - lr`
    (`lr` bounded to +-20 first). `token_kX` tests each token on its own value; `seq_sum_kX`,
    `seq_mean_kX`, `seq_max_kX` test a sequence on the sum, mean or max over its tokens and keep or
    reject it whole; `geometric` (verl <= 0.7.0) tests a sequence on its geometric-mean ratio
    `exp(mean lr)`. The k1 rules and `geometric` are ratio bounds: they keep `exp(statistic)` in
    [`lower`, `upper`] (for k1 that is `mu / pi_prox`, token or product or geometric mean; for
    `geometric` it is `pi_prox / mu`); `lower` defaults to `1 / upper`. k2 and k3 keep the statistic
    at most `upper` and take no `lower`.
    """

    statistic: RejectionStatistic
    upper: PositiveFloat
    lower: PositiveFloat | None = None

    @model_validator(mode="after")
    def _bounds(self) -> RejectionRule:
        if self.lower is not None:
            if self.statistic not in _RATIO_BOUNDED:
                raise ValueError(f"lower only applies to ratio bounds ({', '.join(_RATIO_BOUNDED)}), not {self.statistic!r}")
            if self.lower > self.upper:
                raise ValueError(f"lower ({self.lower}) must be at most upper ({self.upper}): every row would be rejected")
        return self

    @property
    def ratio_bounds(self) -> tuple[float, float] | None:
        """`(lower, upper)` for the ratio-bounded statistics, None for k2/k3 (upper bound only)."""
        if self.statistic not in _RATIO_BOUNDED:
            return None
        return (1.0 / self.upper if self.lower is None else self.lower), self.upper


class RolloutCorrectionSpec(Spec):
    """Correct the engine–learner mismatch on online rows (off by default; measured in every step regardless).

    Importance weights (TIS, `is_level`): `token` weights each token by `min(pi_prox/mu, is_cap)`;
    `sequence` weights every token of a row by `min(prod_t pi_prox/mu, is_cap)`. The log-ratio (its
    sum for `sequence`) is bounded to +-20 before `exp` (verl's safety bound); the weight is detached
    and multiplies the policy-gradient term, as the decoupled-PPO weight does. `is_batch_normalize`
    divides the truncated weights by their mean over the batch (tokens for `token`, rows for
    `sequence`), all workers together, so they average 1.
    Rejection (MIS/RS, `rejection`): each rule drops from the loss the tokens or rows it rejects;
    several rules chain (a token stays only when every rule keeps it). `veto_below` (verl <= 0.7.0)
    drops every row holding a token whose `pi_prox/mu` is below it: a catastrophically unlikely token.
    The correction covers online rows only: fresh and stale ones (on a stale row `pi_prox/mu` holds
    the mismatch and the staleness together, and with `is_level` set this weight replaces the
    decoupled-PPO weight there, so it is never applied twice). Offline rows have a curated behaviour
    policy, not the engine: no weight, no rejection. Tokens whose `mu` is unknown (NaN) get weight 1,
    are never rejected by a token rule, and do not count in a sequence's statistic.
    `warn_k3`: a step whose measured mismatch (mean per-token k3 over fresh online rows) exceeds it
    warns once per run, naming the likely cause; None: never.
    """

    is_level: Literal["token", "sequence"] | None = None
    is_cap: PositiveFloat = 2.0
    is_batch_normalize: bool = False
    rejection: tuple[RejectionRule, ...] = ()
    veto_below: PositiveFloat | None = None
    warn_k3: PositiveFloat | None = 0.01

    @model_validator(mode="after")
    def _not_inert(self) -> RolloutCorrectionSpec:
        if self.is_level is None and (self.is_cap != 2.0 or self.is_batch_normalize):
            raise ValueError("is_cap and is_batch_normalize only apply with is_level ('token' or 'sequence')")
        if len({rule.statistic for rule in self.rejection}) != len(self.rejection):
            raise ValueError("each rejection statistic may appear once (rules chain: give one bound per statistic)")
        return self

    @property
    def corrects(self) -> bool:
        """Whether anything changes the loss (weights, rejection or veto)."""
        return self.is_level is not None or bool(self.rejection) or self.veto_below is not None
