"""Ablations of the quickstart (same data, model, seed and settings; one change each).

- `mixed`: the quickstart itself (GRPO groups of 4 with one offline answer each).
- `on_policy`: no mixer: plain GRPO, every response sampled from the policy.
- `video_only`: the mixed run trained on the video records only (modality sampler, video:1).
- `joint`: the mixed run with video and image records in equal shares (modality sampler, 1:1).
- `threshold`: offline answers only in groups whose on-policy accuracy is below 0.5.
- `decay`: offline answers for the first 100 steps only.

Validation is on the quickstart's `val.jsonl` (no blanked copy). The command that runs these
variants and plots them splits it by modality into `OUT/val_splits/quickstart/val_video.jsonl` and
`val_image.jsonl` (does image data help on video, and does a video-only model answer image
questions?); `evr1 run ablations:<variant>` alone validates on the whole file:

    python -m evr1.cli.ablations --out runs/ablations --plot docs/ablations.png --steps 150 --val-every 25
"""

import fiddle as fdl

from evr1.experiment import Experiment
from evr1.experiment_files import load_config
from evr1.specs import MixerSpec

DATA = "data/quickstart"


def mixed() -> fdl.Config[Experiment]:
    """The quickstart (one offline answer per group of 4), validated on its `val.jsonl` only."""
    cfg, _ = load_config("quickstart")
    cfg.name = "ablations:mixed"
    cfg.data.val = (f"{DATA}/val.jsonl",)
    return cfg


def on_policy() -> fdl.Config[Experiment]:
    """Plain GRPO: no offline answers."""
    cfg = mixed()
    cfg.name = "ablations:on_policy"
    cfg.mixer = fdl.Config(MixerSpec)
    return cfg


def video_only() -> fdl.Config[Experiment]:
    """Mixed, trained on video records only."""
    cfg = mixed()
    cfg.name = "ablations:video_only"
    cfg.data.sampler = "modality"
    cfg.data.modality_ratio = {"video": 1.0}
    return cfg


def joint() -> fdl.Config[Experiment]:
    """Mixed, video and image records in equal shares of every batch."""
    cfg = mixed()
    cfg.name = "ablations:joint"
    cfg.data.sampler = "modality"
    cfg.data.modality_ratio = {"video": 1.0, "image": 1.0}
    return cfg


def threshold() -> fdl.Config[Experiment]:
    """Mixed, but only in groups where fewer than half of the 4 sampled answers are right."""
    cfg = mixed()
    cfg.name = "ablations:threshold"
    cfg.mixer = fdl.Config(MixerSpec, name="offline_k_threshold", k=1, threshold=0.5)
    return cfg


def decay() -> fdl.Config[Experiment]:
    """Mixed for the first 100 steps, then on-policy (k=1 decaying linearly over 100 steps is a cut-off)."""
    cfg = mixed()
    cfg.name = "ablations:decay"
    cfg.mixer = fdl.Config(MixerSpec, name="offline_k_decay", k=1, decay_steps=100)
    return cfg
