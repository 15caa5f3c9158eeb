"""The tiny model of each family (the family, spec and processor fixtures are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from evr1.models import load_model


@pytest.fixture(scope="session")
def model(spec):
    return load_model(spec)
