"""The trainer scores each online response once, even when a mixer needed its accuracy first."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from evr1.data.mixers import Trajectory
from evr1.data.records import Record
from evr1.rewards import RewardRouter
from evr1.rewards.contract import Shown
from evr1.runner.loop.reward_phase import Scorer, reward_input


class CountingScorer(Scorer):
    """The trainer's scorer, with the real router in-process instead of Ray reward workers."""

    def __init__(self) -> None:
        self.router, self.scored = RewardRouter(), []

    def score(self, records, texts, ids, step, timing=None):
        inputs = [reward_input(r, t, i, timing) for r, t, i in zip(records, texts, ids)]
        self.scored += list(texts)
        return inputs, self.router.score(inputs)


def result(text: str, index: int) -> SimpleNamespace:
    return SimpleNamespace(prompt_index=index, token_ids=torch.tensor([1]), logprobs=torch.tensor([0.0]),
                           finish_reason="stop", text=text)


def trajectory(text: str, offline: bool = False) -> Trajectory:
    return Trajectory(0, torch.tensor([1]), torch.tensor([0.0]), "stop", text, offline)


RECORDS = [Record(id=f"r{i}", problem="Which?", problem_type="multiple_choice", answer="A", options=["A. x", "B. y"])
           for i in range(2)]


def test_kept_online_responses_reuse_their_first_scores() -> None:
    scorer = CountingScorer()
    online = [[result("<answer>A</answer>", 0), result("<answer>B</answer>", 0)],
              [result("<answer>B</answer>", 1), result("<answer>B</answer>", 1)]]
    scored = scorer.online_accuracy(RECORDS, online, step=0)
    assert scored.scores == [[1.0, 0.0], [0.0, 0.0]]
    assert len(scorer.scored) == 4
    # group 1 was mixed: its first online response kept, the second replaced by an offline one
    groups = [[trajectory("<answer>A</answer>"), trajectory("<answer>B</answer>")],
              [trajectory("<answer>B</answer>"), trajectory("<answer>A</answer>", offline=True)]]
    flat = [(g, t) for g, group in enumerate(groups) for t in group]
    inputs, outputs = scorer.score_groups(RECORDS, flat, 0, scored)
    assert scorer.scored[4:] == ["<answer>A</answer>"]  # only the offline response is new
    assert [o.components["accuracy"] for o in outputs] == [1.0, 0.0, 0.0, 1.0]
    assert [i.sample_id for i in inputs] == ["r0#0", "r0#1", "r1#2", "r1#3"]


def test_a_changed_text_is_scored_again() -> None:
    scorer = CountingScorer()
    scored = scorer.online_accuracy(RECORDS[:1], [[result("<answer>B</answer>", 0)]], step=0)
    _, outputs = scorer.score_groups(RECORDS[:1], [(0, trajectory("<answer>A</answer>"))], 0, scored)
    assert scorer.scored == ["<answer>B</answer>", "<answer>A</answer>"]
    assert outputs[0].components["accuracy"] == 1.0


def test_without_a_first_pass_everything_is_scored() -> None:
    scorer = CountingScorer()
    flat = [(0, trajectory("<answer>A</answer>")), (1, trajectory("<answer>B</answer>", offline=True))]
    _, outputs = scorer.score_groups(RECORDS, flat, 0, None)
    assert scorer.scored == ["<answer>A</answer>", "<answer>B</answer>"]
    assert [o.components["accuracy"] for o in outputs] == [1.0, 0.0]


def test_rewards_see_the_frames_the_model_saw() -> None:
    """A tracking-style answer by frame index is read against the timestamps from the rollout."""
    record = Record(id="v", problem="Where?", problem_type="multiple_choice", answer="A", options=["A. x", "B. y"])
    seen = reward_input(record, "A", "v#0", {"v": Shown((56, 56), (64, 48), (0.0, 0.5, 1.25), 2.0, "pixels")})
    assert seen.frame_timestamps == (0.0, 0.5, 1.25) and seen.fps == 2.0
    assert (seen.shown_size, seen.source_size, seen.box_units) == ((56, 56), (64, 48), "pixels")
    unseen = reward_input(record, "A", "v#0", {"other": Shown((56, 56), frame_timestamps=(0.0,), fps=1.0)})
    assert unseen.frame_timestamps is None and unseen.fps is None and unseen.shown_size is None
