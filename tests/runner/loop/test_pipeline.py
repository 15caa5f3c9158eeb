"""Pipelined rollouts (`trainer.max_staleness`): what a checkpoint keeps of the generations in flight, and what
the config refuses. The loop itself (kill -9 and resume, staleness per step) is in `test_train.py`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evr1.data.prompting import MediaFailure
from evr1.engines.base import RolloutResult
from evr1.errors import ConfigError
from evr1.experiment import Experiment, apply_overrides, build_experiment
from evr1.experiment_files import load_config
from evr1.rewards.contract import Shown
from evr1.runner.loop.pipeline import IN_FLIGHT, Generation, load_in_flight, save_in_flight


def response(prompt: int, sample: int, tokens: list[int], logprobs: list[float], finish: str = "stop") -> RolloutResult:
    return RolloutResult(prompt, sample, torch.tensor(tokens), torch.tensor(logprobs, dtype=torch.float32), finish, "A")


def test_generations_in_flight_come_back_from_a_checkpoint_exactly(tmp_path: Path) -> None:
    """Log-probs that no decimal rendering keeps (float32 neighbours of 1/3), shown frame times, a failed
    record and a ReMax greedy call all come back bitwise and typed as the rollout worker returned them."""
    third = torch.tensor([1 / 3], dtype=torch.float32)
    logprobs = [float(third), float(torch.nextafter(third, torch.tensor([1.0]))), -7.0e-30]
    sampled = (
        [[response(0, 0, [5, 9, 2], logprobs), response(0, 1, [7], [-0.5], "length")], []],
        {"media/cache_hits": 1.0},
        {"r3": Shown((56, 56), (64, 48), (0.0, 0.25, 1 / 3), 4.0, "pixels", 0.125)},
        {1: MediaFailure("r8", "v.mp4", "video", "corrupt", "moov atom not found")},
    )
    greedy = ([[response(0, 0, [4], [-1.25])], []], {}, {}, {1: MediaFailure("r8", "v.mp4", "video", "corrupt", "x")})
    in_flight = [Generation(7, [3, 8], [3, 8], [3, 4], 5, [], [sampled, greedy]), Generation(8, [1], [], [], 6, [], [])]
    save_in_flight(tmp_path, in_flight)
    back = load_in_flight(tmp_path)
    assert [(g.step, g.sampled, g.kept, g.counts, g.version, g.refs) for g in back] == [
        (7, [3, 8], [3, 8], [3, 4], 5, []), (8, [1], [], [], 6, [])]
    (groups, media, shown, failed), (greedy_groups, _, _, greedy_failed) = back[0].results
    first = groups[0][0]
    assert isinstance(first, RolloutResult) and first.token_ids.dtype == torch.int64
    assert first.logprobs.dtype == torch.float32 and torch.equal(first.logprobs, torch.tensor(logprobs))
    assert [(r.prompt_index, r.sample_index, r.finish_reason, r.text) for r in groups[0]] == [(0, 0, "stop", "A"), (0, 1, "length", "A")]
    assert groups[1] == [] and media == {"media/cache_hits": 1.0}
    assert shown == sampled[2] and isinstance(shown["r3"].size, tuple)
    assert failed == sampled[3] and greedy_failed == greedy[3] and torch.equal(greedy_groups[0][0].token_ids, torch.tensor([4]))


def test_a_checkpoint_of_the_synchronous_loop_has_nothing_in_flight(tmp_path: Path) -> None:
    assert load_in_flight(tmp_path) == [] and not (tmp_path / IN_FLIGHT).exists()


def quickstart(*overrides: str) -> Experiment:
    cfg, _ = load_config("quickstart")
    apply_overrides(cfg, overrides)
    return build_experiment(cfg)


def test_a_colocated_engine_is_refused_in_pipelined_mode() -> None:
    """It sleeps while learner 0 trains on the GPU they share, so it cannot generate meanwhile."""
    with pytest.raises(ConfigError, match=r"trainer.max_staleness > 0 generates while the learners update, but a"
                                          r" colocated engine \(rollout.colocate=True\)"):
        quickstart("trainer.max_staleness=1", "resources.num_gpus=1")
    assert quickstart("trainer.max_staleness=1", "resources.num_gpus=2", "rollout.colocate=False").trainer.max_staleness == 1
    assert quickstart("trainer.max_staleness=1").trainer.max_staleness == 1  # on CPU nothing is shared
    assert quickstart("resources.num_gpus=1").rollout.colocate  # the synchronous loop keeps colocation
