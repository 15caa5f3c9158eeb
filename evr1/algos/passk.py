"""pass@k advantage: credit for raising the expected best score of k sampled responses.

For a group with scores `s` (the rows in the statistics) and `k' = min(k, n)`:

- baseline `b = E[max of a random k'-subset]` = sum_j s_(j) C(n-j, k'-1) / C(n, k'), s_(1) >= s_(2) >= ...
- row `i` gets `E[max(s_i, max of a random (k'-1)-subset of the other rows)] - b`, divided by the
  std of the subset maximum unless `spec.scale_std` is False.

With 0/1 rewards this is the analytic pass@k advantage of Chen et al. (2025, "Pass@k Training"):
correct rows get (1 - b)/sd, wrong ones (1 - b - C(n_wrong - 1, k - 1)/C(n - 1, k - 1))/sd; with k = 1
it is `(s - mean) / population std`.

Rows outside the statistics (offline rows with `in_baseline=False`) are not in `s`: they get
`E[max(s_i, max of a random (k'-1)-subset of s)] - b`. A group with no statistic rows gives 0.
With rows outside, every row is divided by the subset-maximum std of the whole group (k capped at
its size; 1 where that is 0), as GRPO divides by the whole group's std: the std of `s` alone
would blow up an offline row beside a near-flat online group (210 for a right offline row beside
online scores [0, 0, 0.01] at k = 2; 2.0 now).
"""

from __future__ import annotations

from math import comb, sqrt

import torch
from torch import Tensor

from evr1.algos.advantage_inputs import Scores, baseline_rows, per_token, sequence_scores
from evr1.algos.groups import GroupIds, Groups
from evr1.algos.masked import EPS
from evr1.registry import ADVANTAGES
from evr1.specs import AlgoSpec


def expected_max(sorted_desc: list[float], k: int) -> tuple[float, float]:
    """`(E[max], E[max^2])` of a uniformly random `k`-subset of the values (sorted, descending)."""
    n = len(sorted_desc)
    total = comb(n, k)
    weights = [comb(n - j, k - 1) / total for j in range(1, n + 1)]
    return sum(w * v for w, v in zip(weights, sorted_desc)), sum(w * v * v for w, v in zip(weights, sorted_desc))


def expected_max_with(value: float, others_desc: list[float], q: int) -> float:
    """`E[max(value, max of a random q-subset of others)]`; `value` itself when `q == 0`."""
    if q == 0:
        return value
    m = len(others_desc)
    total = comb(m, q)
    return sum(max(value, o) * comb(m - j, q - 1) / total for j, o in enumerate(others_desc, start=1))


def subset_max_std(sorted_desc: list[float], k: int) -> float:
    """Std of the maximum of a uniformly random `min(k, n)`-subset of the values (sorted, descending)."""
    mean, mean_sq = expected_max(sorted_desc, min(k, len(sorted_desc)))
    return sqrt(max(mean_sq - mean * mean, 0.0))


def group_passk(values: list[float], included: list[bool], k: int, scale_std: bool) -> list[float]:
    """pass@k advantages of one group's rows (rule for rows outside the statistics: module docstring)."""
    pool = sorted((v for v, inc in zip(values, included) if inc), reverse=True)
    if not pool:
        return [0.0] * len(values)
    k_eff = min(k, len(pool))
    if pool[0] == pool[-1]:  # every subset maximum is pool[0]: exact gains, no rounding residue
        sd = 0.0
        gains = [0.0 if inc else (max(v, pool[0]) if k_eff > 1 else v) - pool[0] for v, inc in zip(values, included)]
    else:
        mean, _ = expected_max(pool, k_eff)
        sd = subset_max_std(pool, k_eff)
        gains = []
        for value, inc in zip(values, included):
            others = list(pool)
            if inc:
                others.remove(value)
            gains.append(expected_max_with(value, others, k_eff - 1) - mean)
    if not scale_std:
        return gains
    if not all(included):
        sd = subset_max_std(sorted(values, reverse=True), k) or 1.0
    return [g / (sd + EPS) for g in gains]


@ADVANTAGES.register("passk")
def passk(scores: Scores, group_ids: GroupIds, response_mask: Tensor, *, spec: AlgoSpec, offline: Tensor | None = None) -> Tensor:
    """pass@k: each row's contribution to the expected best-of-k score of its group (`spec.passk_k`)."""
    if spec.passk_k is None:
        raise ValueError("passk needs spec.passk_k")
    values = sequence_scores(scores, response_mask)
    include = baseline_rows(offline, spec, values.shape[0], values.device)
    groups = Groups.of(group_ids)
    members: dict[int, list[int]] = {}
    for row, g in enumerate(groups.index.tolist()):
        members.setdefault(g, []).append(row)
    flat, inc = values.tolist(), include.tolist()
    result = [0.0] * len(flat)
    for rows in members.values():
        for row, adv in zip(rows, group_passk([flat[r] for r in rows], [inc[r] for r in rows], spec.passk_k, spec.scale_std)):
            result[row] = adv
    return per_token(torch.tensor(result, dtype=values.dtype, device=values.device), response_mask)
