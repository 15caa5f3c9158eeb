"""The learner on CUDA: bfloat16 autocast over float32 weights, and FSDP2 sharding (one GPU, NCCL)."""

from __future__ import annotations

import pytest
import torch

from evr1.runner.learner import distributed
from evr1.runner.learner.learner import Learner
from evr1.specs import AlgoSpec, OptimSpec, TrainerSpec

from .learner_fixtures import lprocessor_fixture, lspec_fixture, make_samples  # noqa: F401

pytestmark = pytest.mark.gpu


def _learner(spec, **kwargs) -> Learner:
    return Learner.from_spec(spec, AlgoSpec(), OptimSpec(lr=1e-3), TrainerSpec(micro_batch_tokens=200), **kwargs)


def test_bf16_autocast_keeps_float32_master_weights(lspec, lprocessor) -> None:
    samples = make_samples(lprocessor, "vit")
    exact = _learner(lspec, device="cuda")
    fast = _learner(lspec.model_copy(update={"dtype": "bfloat16"}), device="cuda")
    assert exact.autocast is None and fast.autocast == torch.bfloat16
    assert all(p.dtype == torch.float32 for p in fast.model.parameters())
    for a, b in zip(exact.compute_logprobs(samples), fast.compute_logprobs(samples)):
        assert torch.allclose(a, b, atol=0.1)  # bf16 rounding, same policy
    metrics = fast.update(samples)
    assert metrics["skipped_steps"] == 0 and torch.isfinite(torch.tensor(metrics["grad_norm"]))


def test_fsdp2_sharded_learner_trains_and_exports(lspec, lprocessor, tmp_path) -> None:
    distributed.init_process_group(0, 1, f"127.0.0.1:{distributed.free_port()}", backend="nccl")
    try:
        samples = make_samples(lprocessor, "vivt")
        plain = _learner(lspec, device="cuda")
        sharded = _learner(lspec, device="cuda", fsdp=True)
        m_plain, m_sharded = plain.update(samples), sharded.update(samples)
        assert m_sharded["loss"] == pytest.approx(m_plain["loss"], abs=1e-5)
        assert m_sharded["grad_norm"] == pytest.approx(m_plain["grad_norm"], rel=1e-3)
        weights = sharded.weights()
        for name, value in plain.model.state_dict().items():
            assert torch.allclose(weights[name].float().cpu(), value.cpu(), atol=2e-5), name
        sharded.save(str(tmp_path / "ckpt"))
        sharded.export_hf(str(tmp_path / "hf"), lprocessor)
        assert (tmp_path / "hf" / "config.json").is_file()
    finally:
        distributed.destroy_process_group()
