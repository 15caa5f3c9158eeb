"""Rollout correction: the engine–learner mismatch measured and corrected (verl's Rollout Correction).

Inputs, all `[B, T]`: `old_logprobs` (`pi_prox`, the learner's log-probs under the weights at the
start of the step), `behaviour_logprobs` (`mu`, the engine's own log-probs for online rows; NaN
where unknown) and `tokens` (bool, from `engine_tokens`: the valid tokens of online rows whose `mu`
is known). Offline rows never have such tokens: their behaviour policy is a curated one, not the
engine. Everything is computed from `lr = log pi_prox - log mu` on those tokens, detached.

- `MismatchStats.of(...)`: sums and maxima from which the mismatch metrics are formed, so that
  shards, workers, engines and problem types add up exactly (`+`); `.metrics()` gives
  `abs_diff_mean`, `abs_diff_max` (|lr|), `k1` (mean `log mu - log pi_prox`: estimates
  KL(mu || pi_prox) from mu's samples; verl's `kl`), `k3` (mean `r - 1 - log r`, `r = pi_prox/mu`:
  the same KL, non-negative; verl's `k3_kl`), `seq_log_ratio_mean` / `seq_log_ratio_abs_max` (of a
  row's summed lr), `ratio_outside_frac` (tokens with `r` outside [0.5, 2]) and verl's off-policy
  metrics: `training_ppl`, `rollout_ppl` (row means of `exp(-mean_t log p)`), `log_ppl_diff`,
  `log_ppl_abs_diff` (row means of `mean_t log mu - mean_t log pi_prox`), `ppl_ratio`,
  `chi2_token` (`E[r^2] - 1`) and `chi2_seq` (`E[(prod_t r_t)^2] - 1`).
- `correct(...)`: the importance weights and the rejection mask a `RolloutCorrectionSpec` asks for
  (`Correction`); the learner multiplies each online token's policy-gradient term by the weight
  (`actor_objective(rollout_weights=...)`) and drops rejected tokens from the response mask before
  counting the loss normaliser, as verl drops them from its response mask.
- `mismatch_warning(...)`: the one-line diagnosis of a mismatch far out of line.

Every `exp` takes its argument bounded to +-`SAFETY_BOUND` (verl's bound). Read from volcengine/verl
`verl/trainer/ppo/rollout_corr_helper.py` at b178a3cd (geometric mode and veto: v0.7.0, f9c855f7).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import astuple, dataclass, fields

import torch
from torch import Tensor

from evr1.specs import RejectionRule, RolloutCorrectionSpec

SAFETY_BOUND = 20.0
OUTSIDE_RATIO = (0.5, 2.0)  # `ratio_outside_frac`: tokens whose pi_prox/mu leaves this range


def engine_tokens(response_mask: Tensor, behaviour_logprobs: Tensor | None, offline: Tensor | None = None) -> Tensor:
    """Valid tokens of online rows (`offline [B]` False or None) whose engine log-prob is known (finite)."""
    mask = response_mask.bool()
    if behaviour_logprobs is None:
        return torch.zeros_like(mask)
    tokens = mask & torch.isfinite(behaviour_logprobs)
    if offline is not None:
        tokens = tokens & ~offline.bool().to(mask.device)[:, None]
    return tokens


def _log_ratio(old_logprobs: Tensor, behaviour_logprobs: Tensor, tokens: Tensor) -> Tensor:
    """`log pi_prox - log mu` on `tokens`, 0 elsewhere (NaN and padding never leak), detached."""
    return torch.where(tokens, old_logprobs.detach() - behaviour_logprobs.detach(), 0.0)


def _bounded(x: Tensor) -> Tensor:
    return x.clamp(-SAFETY_BOUND, SAFETY_BOUND)


def _row_sum(values: Tensor, tokens: Tensor) -> Tensor:
    return torch.where(tokens, values, 0.0).sum(-1)


def _row_mean(values: Tensor, tokens: Tensor) -> Tensor:
    return _row_sum(values, tokens) / tokens.sum(-1).clamp_min(1).to(values.dtype)


@dataclass(frozen=True)
class MismatchStats:
    """Sums (and two maxima) over the corrected tokens and their rows; add them, then read `.metrics()`."""

    tokens: float = 0.0
    rows: float = 0.0
    abs_sum: float = 0.0
    k1_sum: float = 0.0
    k3_sum: float = 0.0
    outside: float = 0.0
    rho2_sum: float = 0.0
    seq_log_ratio_sum: float = 0.0
    seq_rho2_sum: float = 0.0
    training_ppl_sum: float = 0.0
    rollout_ppl_sum: float = 0.0
    log_ppl_diff_sum: float = 0.0
    log_ppl_abs_diff_sum: float = 0.0
    ppl_ratio_sum: float = 0.0
    abs_max: float = 0.0  # maxima last: `MAXIMA` of them
    seq_log_ratio_abs_max: float = 0.0

    MAXIMA = 2  # the last two fields are maxima, the others sums

    @classmethod
    @torch.no_grad()
    def of(cls, old_logprobs: Tensor, behaviour_logprobs: Tensor, tokens: Tensor) -> MismatchStats:
        """The stats of the rows of one batch (rows without a corrected token are left out)."""
        if not bool(tokens.any()):
            return cls()
        lr = _log_ratio(old_logprobs, behaviour_logprobs, tokens).double()
        rows = tokens.any(-1)
        bounded = _bounded(lr)
        rho = bounded.exp()
        seq = _row_sum(lr, tokens)[rows]
        mean_old = _row_mean(old_logprobs.double(), tokens)[rows]
        mean_mu = _row_mean(behaviour_logprobs.double(), tokens)[rows]
        log_ppl_diff = mean_mu - mean_old
        low, high = (math.log(b) for b in OUTSIDE_RATIO)

        def total(values: Tensor) -> float:
            return float(torch.where(tokens, values, 0.0).sum())

        return cls(
            tokens=float(tokens.sum()),
            rows=float(rows.sum()),
            abs_sum=total(lr.abs()),
            k1_sum=total(-lr),
            k3_sum=total(rho - 1 - bounded),
            outside=float(((lr < low) | (lr > high))[tokens].sum()),
            rho2_sum=total(rho.square()),
            seq_log_ratio_sum=float(seq.sum()),
            seq_rho2_sum=float((2 * _bounded(seq)).exp().sum()),
            training_ppl_sum=float((-mean_old).exp().sum()),
            rollout_ppl_sum=float((-mean_mu).exp().sum()),
            log_ppl_diff_sum=float(log_ppl_diff.sum()),
            log_ppl_abs_diff_sum=float(log_ppl_diff.abs().sum()),
            ppl_ratio_sum=float(_bounded(log_ppl_diff).exp().sum()),
            abs_max=float(lr.abs()[tokens].max()),
            seq_log_ratio_abs_max=float(seq.abs().max()),
        )

    def __add__(self, other: MismatchStats) -> MismatchStats:
        return MismatchStats.from_parts(
            [a + b for a, b in zip(self.summed(), other.summed(), strict=True)],
            [max(a, b) for a, b in zip(self.maxima(), other.maxima(), strict=True)],
        )

    def summed(self) -> list[float]:
        """The fields that add (for an all-reduce sum)."""
        return list(astuple(self)[: -self.MAXIMA])

    def maxima(self) -> list[float]:
        """The fields that combine by max (for an all-reduce max)."""
        return list(astuple(self)[-self.MAXIMA :])

    @classmethod
    def from_parts(cls, summed: list[float], maxima: list[float]) -> MismatchStats:
        names = [f.name for f in fields(cls)]
        return cls(**dict(zip(names, [*summed, *maxima], strict=True)))

    def metrics(self) -> dict[str, float]:
        """The mismatch metrics (module docstring); {} when no token was measured."""
        if not self.tokens:
            return {}
        n, rows = self.tokens, max(self.rows, 1.0)
        return {
            "abs_diff_mean": self.abs_sum / n,
            "abs_diff_max": self.abs_max,
            "k1": self.k1_sum / n,
            "k3": self.k3_sum / n,
            "seq_log_ratio_mean": self.seq_log_ratio_sum / rows,
            "seq_log_ratio_abs_max": self.seq_log_ratio_abs_max,
            "ratio_outside_frac": self.outside / n,
            "training_ppl": self.training_ppl_sum / rows,
            "rollout_ppl": self.rollout_ppl_sum / rows,
            "log_ppl_diff": self.log_ppl_diff_sum / rows,
            "log_ppl_abs_diff": self.log_ppl_abs_diff_sum / rows,
            "ppl_ratio": self.ppl_ratio_sum / rows,
            "chi2_token": self.rho2_sum / n - 1.0,
            "chi2_seq": self.seq_rho2_sum / rows - 1.0,
        }


@dataclass(frozen=True)
class Correction:
    """`weights [B, T]` (detached; 1 off the corrected tokens; None when the spec has no `is_level`),
    `keep [B, T]` (False on rejected tokens: AND it into the response mask) and the metrics of this batch."""

    weights: Tensor | None
    keep: Tensor
    metrics: dict[str, float]


def importance_weights(lr: Tensor, tokens: Tensor, level: str) -> Tensor:
    """Untruncated `pi_prox/mu` on `tokens` (1 elsewhere): per token, or the row's product on its tokens."""
    if level == "token":
        raw = _bounded(lr).exp()
    elif level == "sequence":
        raw = _bounded(_row_sum(lr, tokens)).exp()[:, None].expand_as(lr)
    else:
        raise ValueError(f"unknown importance-weight level {level!r}; known: token, sequence")
    return torch.where(tokens, raw, 1.0)


def _statistic(lr: Tensor, tokens: Tensor, name: str) -> tuple[Tensor, bool]:
    """The statistic a rule tests: per token `[B, T]` (token rules) or per row `[B]`; and whether per row."""
    if name == "geometric":
        return _bounded(_row_mean(lr, tokens)), True
    bounded = _bounded(lr)
    per_token = {"k1": -bounded, "k2": 0.5 * bounded.square(), "k3": bounded.exp() - 1 - bounded}[name[-2:]]
    if name.startswith("token_"):
        return per_token, False
    if name.startswith("seq_sum_"):
        return _row_sum(per_token, tokens), True
    if name.startswith("seq_mean_"):
        return _row_mean(per_token, tokens), True
    return per_token.masked_fill(~tokens, -torch.inf).amax(-1).clamp_min(0.0), True  # seq_max: k2, k3 >= 0


def rule_keeps(lr: Tensor, tokens: Tensor, rule: RejectionRule) -> Tensor:
    """`[B, T]` bool: False on the tokens `rule` rejects (a sequence rule: every column of a rejected row)."""
    stat, per_row = _statistic(lr, tokens, rule.statistic)
    bounds = rule.ratio_bounds
    if bounds is None:
        inside = stat <= rule.upper
    else:
        inside = (stat >= math.log(bounds[0])) & (stat <= math.log(bounds[1]))
    if per_row:
        return (inside | ~tokens.any(-1))[:, None].expand_as(tokens)
    return inside | ~tokens


def veto_keeps(lr: Tensor, tokens: Tensor, veto_below: float) -> Tensor:
    """`[B, T]` bool: False on every column of a row holding a token with `pi_prox/mu < veto_below`."""
    vetoed = (tokens & (lr < math.log(veto_below))).any(-1)
    return (~vetoed)[:, None].expand_as(tokens)


def _fraction(flags: Tensor, over: Tensor) -> float:
    return float((flags & over).sum()) / max(float(over.sum()), 1.0)


@torch.no_grad()
def correct(
    old_logprobs: Tensor,
    behaviour_logprobs: Tensor,
    tokens: Tensor,
    spec: RolloutCorrectionSpec,
    *,
    reduce_sum: Callable[[list[float]], list[float]] = lambda values: values,
) -> Correction:
    """The weights and rejection mask `spec` asks for on `tokens` (see `engine_tokens`), and their metrics.

    `reduce_sum` adds a list of floats over data-parallel workers (identity for one): batch
    normalisation then divides by the mean over the whole global batch, as every worker must.
    Metrics (this batch's): `is_mean` (truncated weights, before normalisation), `is_max`
    (untruncated), `is_truncated_frac`, `is_batch_norm_factor`; `rejected_token_frac` and
    `rejected_row_frac` (over corrected tokens and rows), `rs_<statistic>_rejected_frac` (tokens
    each rule alone rejects), `veto_row_frac`.
    """
    lr = _log_ratio(old_logprobs, behaviour_logprobs, tokens)
    rows = tokens.any(-1)
    metrics: dict[str, float] = {}
    weights = None
    if spec.is_level is not None:
        raw = importance_weights(lr, tokens, spec.is_level)
        weights = raw.clamp(max=spec.is_cap)
        metrics["is_mean"] = float(weights[tokens].mean()) if bool(tokens.any()) else 1.0
        metrics["is_max"] = float(raw[tokens].max()) if bool(tokens.any()) else 1.0
        metrics["is_truncated_frac"] = _fraction(raw > spec.is_cap, tokens)
        if spec.is_batch_normalize:
            weights, metrics["is_batch_norm_factor"] = _normalised(weights, tokens, spec.is_level, reduce_sum)
    keep = torch.ones_like(tokens)
    for rule in spec.rejection:
        kept = rule_keeps(lr, tokens, rule)
        metrics[f"rs_{rule.statistic}_rejected_frac"] = _fraction(~kept, tokens)
        keep = keep & kept
    if spec.veto_below is not None:
        kept = veto_keeps(lr, tokens, spec.veto_below)
        metrics["veto_row_frac"] = _fraction(~kept[:, 0], rows) if kept.shape[1] else 0.0
        keep = keep & kept
    if spec.rejection or spec.veto_below is not None:
        metrics["rejected_token_frac"] = _fraction(~keep, tokens)
        metrics["rejected_row_frac"] = _fraction((~keep & tokens).any(-1), rows)
    return Correction(weights, keep, metrics)


def _normalised(
    weights: Tensor, tokens: Tensor, level: str, reduce_sum: Callable[[list[float]], list[float]]
) -> tuple[Tensor, float]:
    """Weights divided by their global mean (over tokens, or over rows for `sequence`), and that mean."""
    if level == "token":
        total, count = float(weights[tokens].sum()), float(tokens.sum())
    else:  # a row's weight sits on each of its tokens: its token mean is the row's weight
        rows = tokens.any(-1)
        total, count = float(_row_mean(weights, tokens)[rows].sum()), float(rows.sum())
    total, count = reduce_sum([total, count])
    mean = total / count if count else 1.0
    if mean <= 1e-8:
        return weights, 1.0
    return torch.where(tokens, weights / mean, weights), mean


def mismatch_warning(metrics: dict[str, float], *, warn_k3: float | None, engine: str, engine_dtype: str,
                     learner_dtype: str) -> str | None:  # fmt: skip
    """The warning for a mismatch far out of line (mean k3 above `warn_k3`), naming the likely cause; else None.

    Same dtypes and a k1 about as large as the mean |lr| (the engine's log-probs lower, or higher,
    on nearly every token) point at log-probs of another distribution (temperature, top-k/top-p,
    processed logits); otherwise at the engine's numerics (attention implementation, kernels).
    """
    if warn_k3 is None or metrics.get("k3", 0.0) <= warn_k3:
        return None
    head = (
        f"engine {engine!r} and the learner disagree far more than numerical noise: mean per-token k3 "
        f"{metrics['k3']:.3g} (> warn_k3 {warn_k3}), mean |log p difference| {metrics['abs_diff_mean']:.3g}, "
        f"{metrics['ratio_outside_frac']:.1%} of tokens with a probability ratio outside [0.5, 2]. Likely cause: "
    )
    if engine_dtype != learner_dtype:
        cause = (
            f"precision: the engine runs in {engine_dtype} and the learner in {learner_dtype} "
            "(run both in one dtype, or correct with a preset such as algo.rollout_correction='token_tis')"
        )
    elif abs(metrics["k1"]) > 0.5 * metrics["abs_diff_mean"]:
        cause = (
            "the engine's log-probs are of another distribution than the learner's (k1 "
            f"{metrics['k1']:.3g} has one sign on most tokens): check its temperature, top-k/top-p and whether "
            "it reports processed or raw log-probs (evr1 expects log_softmax(logits / T) over the whole vocabulary)"
        )
    else:
        cause = (
            "the engine's settings: attention implementation, fused kernels or MoE routing, or weights that did not "
            "sync (the learner and the engine should hold the same weights at the start of the step)"
        )
    return head + cause
