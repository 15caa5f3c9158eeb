"""An HF engine per family on a tiny model whose output distribution is made peaked.

Random init gives near-uniform next-token distributions (logits ~ 0.1); scaling the output layer
makes them depend visibly on the input, so log-prob comparisons and greedy checks mean something.
The family, spec and processor fixtures are in tests/conftest.py.
"""

from __future__ import annotations

import pytest
import torch

from evr1.engines.hf import HFEngine
from evr1.models import load_model

SHARPEN = 30.0


def sharpened(spec):
    model = load_model(spec)
    with torch.no_grad():
        model.lm_head.weight.mul_(SHARPEN)
    return model


@pytest.fixture(scope="session")
def engine(spec, processor) -> HFEngine:
    return HFEngine(sharpened(spec), processor)
