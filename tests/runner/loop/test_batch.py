"""The step's batch: what the workers are sent for its rows, which rows train, and the response metrics.
Hand-computed values."""

from __future__ import annotations

import pytest
import torch

from evr1.data.mixers import Trajectory
from evr1.data.records import Record
from evr1.runner.loop.batch import Row, StepBatch, response_metrics
from evr1.runner.ray.workers import in_order

RECORDS = [Record(id=f"r{i}", problem="Which?", problem_type="multiple_choice", answer="A", options=["A. x", "B. y"])
           for i in range(2)]


def trajectory(tokens: int, finish: str = "stop", *, offline: bool = False) -> Trajectory:
    return Trajectory(0, torch.arange(tokens), torch.zeros(tokens), finish, "x", offline)  # type: ignore[arg-type]


def test_items_carry_each_rows_record_group_and_staleness_and_only_training_rows_are_updated() -> None:
    rows = [Row(0, trajectory(3)), Row(0, trajectory(1, "length", offline=True)),
            Row(1, trajectory(2), advantages=torch.zeros(2), trains=False)]
    batch = StepBatch(step=4, records=RECORDS, sampled=[[], []], shown={}, staleness=2).with_rows(rows)
    items = batch.items()
    assert [(i.record.id, i.group_id, i.offline, i.staleness) for i in items] == [
        ("r0", 0, False, 2), ("r0", 0, True, 0), ("r1", 1, False, 2)]  # curated rows are never stale
    assert items[0].response_ids is rows[0].trajectory.token_ids and items[2].advantages is rows[2].advantages
    assert batch.training == rows[:2] and len(batch.items(batch.training)) == 2
    assert response_metrics(batch.rows) == {"response/length": 2.0, "response/stop_frac": pytest.approx(2 / 3),
                                             "tokens/response": 6.0}


def test_results_of_calls_on_shards_come_back_in_the_items_order() -> None:
    items = [object() for _ in range(4)]
    shards = [[items[1], items[3]], [items[0], items[2]], []]  # a worker may get nothing
    assert in_order(items, shards, [["b", "d"], ["a", "c"], []]) == ["a", "b", "c", "d"]
