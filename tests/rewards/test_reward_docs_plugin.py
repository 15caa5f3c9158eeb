"""The worked plugin example of docs/rewards.md runs as written and can be routed to."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from reward_helpers import make

from evr1.registry import REWARDS
from evr1.rewards import RewardRouter
from evr1.specs import RewardSpec

DOC = Path(__file__).resolve().parents[2] / "docs" / "rewards.md"


def test_documented_plugin_registers_and_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = DOC.read_text()
    source = re.search(r"`acme_rewards/__init__.py`:\n\n```python\n(.*?)```", text, re.DOTALL).group(1)
    (tmp_path / "acme_rewards").mkdir()
    (tmp_path / "acme_rewards" / "__init__.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module("acme_rewards")
        assert REWARDS.describe("acme/st_iou").summary == "Temporal IoU, zero below 0.3 (the acme way)."
        router = RewardRouter(RewardSpec(routes={"stvg": "acme/st_iou"}, format="none"))
        gt = {"time": [0, 4], "boxes": {"1": [0, 0, 1, 1]}}
        outs = router.score([
            make("<answer>[0, 2]</answer>", gt, "stvg", duration=10.0),  # IoU 0.5
            make("<answer>[0, 1]</answer>", gt, "stvg", duration=10.0),  # IoU 0.25 < 0.3 -> 0
            make("<answer>[0, 2]</answer>", gt, "stvg"),  # no duration: not applicable
        ])  # fmt: skip
        assert [o.score for o in outs] == [0.5, 0.0, 0.0]
        assert outs[1].components["raw_iou"] == 0.25
        assert not outs[2].applicable
    finally:
        REWARDS.unregister("acme/st_iou")
