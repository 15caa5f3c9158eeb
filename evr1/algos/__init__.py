"""The math of the trainer: pure torch, no Ray, no models.

- `advantages` (registry `advantages`): `fn(scores, group_ids, response_mask, *, spec, offline=None)
  -> Tensor[B, T]` token-level advantages (`remax` also needs `baselines=`).
- `losses` (registry `policy_losses`): `fn(logprobs, old_logprobs, advantages, response_mask, *,
  spec, normaliser, ...) -> (loss, metrics)`.
- `aggregation` (`Normaliser`, `aggregate`), `kl`, `entropy`, `filters`, `shaping`, `offpolicy`.
- `rollout_correction`: the engine–learner mismatch (metrics, TIS weights, rejection); its named
  presets are in `rollout_presets` (registry `rollout_corrections`).

Importing `evr1.algos` imports nothing; the submodules import torch.
"""
