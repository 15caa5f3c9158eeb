"""A LoRA run through the CLI: its KL reference is the base with the adapters off; the exported model loads
with plain transformers and is the base model with the trained adapter merged in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from evr1.run_dir import read_metrics

from ..learner.learner_fixtures import FAMILY, make_samples
from .test_train import run, settings

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def test_lora_run_with_a_kl_term_exports_a_plain_merged_model(tmp_path: Path, model_cache: Path) -> None:
    """2 replicated LoRA learners with KL as a loss term. The KL reference is the learners' base with the adapters
    off (no reference worker): KL starts at 0 (the adapters start at B = 0, so policy = base) and grows once they
    train (a reference with them on would stay at 0). The exported model loads with plain transformers and is the
    base with the saved adapter merged in."""
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText

    from evr1.models import load_model, load_processor
    from evr1.models.forward import response_logprobs
    from evr1.models.lora import ADAPTER_DIR
    from evr1.models.testing import tiny_spec

    models = model_cache
    extra = {"model.lora.rank": "8", "model.lora.alpha": "16.0", "trainer.save_every": "3", "algo.kl.enabled": "True",
             "algo.kl.coef": "0.1", "resources.learner_workers": "2"}
    out = run("quickstart:debug", "--run-dir", str(tmp_path / "run"), *settings(tmp_path, models, **extra))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "KL reference: the learners' base model, LoRA adapters off" in out.stdout
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"]["lora"]["rank"] == 8
    rows = read_metrics(tmp_path / "run")
    assert [r["step"] for r in rows] == [0, 1, 2, 3]  # step 0: validation before training
    trained = rows[1:]
    assert all(r["learner/skipped_steps"] == 0.0 and r["timing/reference"] > 0 for r in trained)
    assert trained[0]["learner/kl"] == pytest.approx(0.0, abs=1e-6)
    assert all(r["learner/kl"] > 1e-6 for r in trained[1:])
    saved = torch.load(tmp_path / "run" / "checkpoints" / "step_000003" / "learner" / "model.pt", weights_only=True)
    assert saved and all(".lora_A." in k or ".lora_B." in k for k in saved)

    exported = tmp_path / "run" / "final_model"
    plain = AutoModelForImageTextToText.from_pretrained(exported)  # no peft involved
    base_spec = tiny_spec(FAMILY, models)
    adapter = json.loads((exported / ADAPTER_DIR / "adapter_config.json").read_text())
    assert adapter["r"] == 8 and adapter["lora_alpha"] == 16.0
    rebuilt = PeftModel.from_pretrained(load_model(base_spec), exported / ADAPTER_DIR).merge_and_unload()
    base = load_model(base_spec)
    processor = load_processor(base_spec)
    samples = make_samples(processor, "vit", seed=11)
    prompts, responses = [s.prompt for s in samples], [s.response_ids for s in samples]
    mine, mask = response_logprobs(plain, prompts, responses, 0)
    theirs, _ = response_logprobs(rebuilt, prompts, responses, 0)
    before, _ = response_logprobs(base, prompts, responses, 0)
    assert torch.allclose(mine[mask], theirs[mask], atol=1e-5)  # final_model = base + the saved adapter, merged
    assert not torch.allclose(mine[mask], before[mask], atol=1e-4)  # and training moved it off the base
