"""Checking records' reference answers as their routed rewards read them (`evr1 data check`).

Each record is scored with an empty response through the default routes: every built-in scorer
reads the reference before the response, so a reference its reward cannot read (a
temporal_grounding `"soon"`, a 3-number box, a choice letter past the options) fails here just as
it would fail every sample in training. Nothing external is called: with the default routes no
type goes to an LLM judge, and code references are checked for their shape (language, tests or
markup) without running them. A `null` or blank answer is a problem for every type.

`offline_warnings` scores each record's curated `offline_response` the same way: one its reward
scores below 1 would train the policy towards a wrong answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evr1.rewards.contract import RewardInput, RewardOutput
from evr1.rewards.execution import Failure, run_all
from evr1.rewards.router import RewardRouter
from evr1.specs import CodeSandboxSpec, RewardSpec

if TYPE_CHECKING:
    from evr1.data.records import Record


def _spec() -> RewardSpec:
    return RewardSpec(code=CodeSandboxSpec(execute=False))  # nothing runs


def reference_errors(records: Sequence[Record]) -> list[str | None]:
    """Per record, why its routed reward cannot read its `answer` (None: it can)."""
    from evr1.registry import REWARDS

    spec = _spec()
    router = RewardRouter(spec)
    errors: list[str | None] = [None] * len(records)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        if record.answer is None or (isinstance(record.answer, str) and not record.answer.strip()):
            errors[i] = f"empty reference answer (record {record.id!r})"
        else:
            groups[router.route(record.problem_type)].append(i)
    names = list(groups)
    jobs = [(REWARDS.get(n), [RewardInput.from_record(records[i], "") for i in groups[n]]) for n in names]
    for name, values in zip(names, run_all(jobs, spec)):
        for i, value in zip(groups[name], values):
            message = value.message if isinstance(value, Failure) else value.error if isinstance(value, RewardOutput) else None
            if message:
                errors[i] = f"reward {name!r} cannot read this reference: {message} (record {records[i].id!r})"
    return errors


def offline_warnings(records: Sequence[Record]) -> list[str | None]:
    """Per record, why its `offline_response` is suspect: its routed reward scores it below 1 against the
    record's own answer (None: no offline response, a full score, or a reward that does not apply).
    Pass records whose references are readable (`reference_errors`)."""
    router = RewardRouter(_spec())
    chosen = [i for i, r in enumerate(records) if r.offline_response is not None]
    outputs = router.score([RewardInput.from_record(records[i], records[i].offline_response or "") for i in chosen])
    warnings: list[str | None] = [None] * len(records)
    for i, out in zip(chosen, outputs):
        accuracy = out.components.get("accuracy", out.score)
        if out.applicable and out.error is None and accuracy < 1.0:
            record = records[i]
            warnings[i] = (
                f"reward {router.route(record.problem_type)!r} scores this curated answer {accuracy:g} against the"
                f" record's answer {record.answer!r}: training would imitate an answer that is not right (record {record.id!r})"
            )
    return warnings
