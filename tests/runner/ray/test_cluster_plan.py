"""Placement bundles, the resource check, and the storage rule for workers: pure functions, no Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from evr1.errors import ConfigError
from evr1.experiment import Experiment
from evr1.runner.ray.cluster import Ask, bundles, check_fits
from evr1.runner.ray.worker_paths import for_workers, needed, refusal, unseen
from evr1.specs import CacheSpec, DataSpec, EvalSpec, MixerSpec, ModelSpec


def node(cpus: float, gpus: float = 0, alive: bool = True) -> dict:
    return {"Alive": alive, "Resources": {"CPU": cpus, **({"GPU": gpus} if gpus else {})}}


CPU_RUN = [Ask("learner 0", 0.5), Ask("learner 1", 0.5), Ask("rollout", 0.5), Ask("reward 0", 0.25)]
COLOCATED = [Ask("learner 0", 1, 0.5), Ask("learner 1", 1, 1.0), Ask("rollout", 1, 0.5, "learner 0"),
             Ask("reference", 1, 0.25, "learner 0")]


def test_actors_sharing_a_gpu_share_one_bundle() -> None:
    shaped, index = bundles(COLOCATED)
    assert shaped == [{"CPU": 3.0, "GPU": 1.25}, {"CPU": 1.0, "GPU": 1.0}]
    assert index == {"learner 0": 0, "learner 1": 1, "rollout": 0, "reference": 0}


def test_cpu_actors_get_a_bundle_each() -> None:
    shaped, index = bundles(CPU_RUN)
    assert shaped == [{"CPU": 0.5}, {"CPU": 0.5}, {"CPU": 0.5}, {"CPU": 0.25}]
    assert list(index.values()) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("asks", "nodes", "message"),
    [
        (CPU_RUN, [node(1)], r"needs 1\.75 CPUs \(the cluster has 1\)"),
        (CPU_RUN, [node(1), node(1, alive=False)], r"needs 1\.75 CPUs \(the cluster has 1\)"),  # dead nodes count 0
        (COLOCATED, [node(8, 1)], r"needs 2\.25 GPUs \(the cluster has 1\)"),
        (COLOCATED, [node(2, 2), node(2, 2)], r"no single node of the cluster has \{'CPU': 3\.0, 'GPU': 1\.25\}"),
    ],
)
def test_a_run_the_cluster_cannot_hold_is_refused_naming_what_is_missing(asks, nodes, message) -> None:
    with pytest.raises(ConfigError, match=message):
        check_fits(asks, nodes)


@pytest.mark.parametrize(("asks", "nodes"), [(CPU_RUN, [node(2)]), (CPU_RUN, [node(1), node(1)]), (COLOCATED, [node(4, 3)])])
def test_a_run_that_fits_is_accepted(asks, nodes) -> None:
    check_fits(asks, nodes)


def test_the_refusal_lists_every_actor_request() -> None:
    with pytest.raises(ConfigError) as caught:
        check_fits(COLOCATED, [node(1, 1)])
    assert "learner 0 1 CPU + 0.5 GPU, learner 1 1 CPU + 1 GPU, rollout 1 CPU + 0.5 GPU" in str(caught.value)


def test_workers_get_every_path_absolute_from_the_drivers_folder(tmp_path: Path) -> None:
    (tmp_path / "models" / "mine").mkdir(parents=True)
    exp = Experiment(
        model=ModelSpec(name="models/mine", cache_dir="built"),
        data=DataSpec(train=("data/train.jsonl",), val=("data/val.jsonl",), data_root="media",
                      cache=CacheSpec(path="cache.lmdb")),
        mixer=MixerSpec(name="offline_k", file="curated.jsonl"),
        eval=EvalSpec(data_root="bench", cache=CacheSpec(path="/abs/eval.lmdb")),
    )  # fmt: skip
    out = for_workers(exp, tmp_path)
    assert out.data.train == (f"{tmp_path}/data/train.jsonl",) and out.data.val == (f"{tmp_path}/data/val.jsonl",)
    assert out.data.data_root == f"{tmp_path}/media" and out.data.cache.path == f"{tmp_path}/cache.lmdb"
    assert out.mixer.file == f"{tmp_path}/curated.jsonl"
    assert out.eval.data_root == f"{tmp_path}/bench" and out.eval.cache.path == "/abs/eval.lmdb"
    assert out.model.name == f"{tmp_path}/models/mine" and out.model.cache_dir == f"{tmp_path}/built"
    assert for_workers(exp.model_copy(update={"model": ModelSpec(name="tiny-qwen2-vl")}), tmp_path).model.name == "tiny-qwen2-vl"
    assert needed(out, [tmp_path / "media"], None) == [
        f"{tmp_path}/data/train.jsonl", f"{tmp_path}/data/val.jsonl", f"{tmp_path}/media", f"{tmp_path}/cache.lmdb",
        f"{tmp_path}/curated.jsonl", f"{tmp_path}/models/mine",
    ]  # fmt: skip


def test_a_worker_that_cannot_see_a_path_or_share_the_run_folder_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (tmp_path / "seen").write_text("x")
    good = unseen([str(tmp_path / "seen")], str(run_dir))
    blind = unseen([str(tmp_path / "seen"), str(tmp_path / "gone")], str(run_dir))
    elsewhere = ([], str(tmp_path / "node-local" / "probe"))  # a probe the driver cannot see
    message = refusal({"learner 0 on node A": good, "rollout on node B": blind, "learner 1 on node C": elsewhere}, run_dir)
    assert message is not None
    assert f"rollout on node B cannot see {tmp_path / 'gone'}" in message
    assert f"learner 1 on node C wrote {tmp_path / 'node-local' / 'probe'}, which the driver does not see" in message
    assert "learner 0" not in message
    assert list(run_dir.iterdir()) == []  # the probes are removed
    assert refusal({"learner 0 on node A": unseen([str(tmp_path / "seen")], str(run_dir))}, run_dir) is None
    unwritable = unseen([], str(tmp_path / "no-such-folder"))
    assert unwritable[1] is None and "not writable" in unwritable[0][0]
