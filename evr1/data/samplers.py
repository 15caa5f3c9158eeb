"""Prompt samplers (registry `samplers`): which records make up each step's batch.

A sampler is reproducible from its seed and resumable from `state_dict()`. Built with
`SAMPLERS.get(name)(modalities, seed=..., ratios=...)`, where `modalities[i]` is the modality of
record `i` ("video", "image" or "text"; a record with both a video and an image counts as video).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evr1.errors import ConfigError
from evr1.registry import SAMPLERS

MODALITIES = ("video", "image", "text")


def modality_of(record_modality: str) -> str:
    """The sampling modality of a `Record.modality` value."""
    return "video" if record_modality == "video+image" else record_modality


class _Stream:
    """Endless reshuffled epochs over a fixed list of indices."""

    def __init__(self, indices: Sequence[int], seed: int) -> None:
        self.indices = np.asarray(indices, dtype=np.int64)
        self.seed = seed
        self.epoch = 0
        self.position = 0
        self._order = self._shuffle()

    def _shuffle(self) -> np.ndarray:
        rng = np.random.default_rng([self.seed, self.epoch])
        return self.indices[rng.permutation(len(self.indices))]

    def take(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n:
            if self.position == len(self._order):
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._shuffle()
            step = min(n - len(out), len(self._order) - self.position)
            out.extend(int(i) for i in self._order[self.position : self.position + step])
            self.position += step
        return out

    def state(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def restore(self, state: Mapping[str, int]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._order = self._shuffle()


@SAMPLERS.register("uniform")
class UniformSampler:
    """Shuffled epochs over all records, whatever their modality."""

    def __init__(self, modalities: Sequence[str], *, seed: int = 0, ratios: Mapping[str, float] | None = None) -> None:
        if ratios:
            raise ConfigError("the 'uniform' sampler takes no modality ratios; use the 'modality' sampler")
        if not modalities:
            raise ConfigError("cannot sample from an empty dataset")
        self._stream = _Stream(range(len(modalities)), seed)

    def sample(self, n: int) -> list[int]:
        return self._stream.take(n)

    def state_dict(self) -> dict[str, Any]:
        return {"stream": self._stream.state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._stream.restore(state["stream"])


@SAMPLERS.register("modality")
class ModalitySampler:
    """Batches with target modality proportions (default: the data's natural proportions).

    Each modality has its own shuffled stream, so image and video records never compete for
    positions. Counts follow the ratios exactly over time: every place in a batch goes to the
    modality furthest behind its share so far (what is owed carries over from batch to batch), so a
    0.25 image share with batches of 2 alternates 0 and 1 images rather than rounding to 0 forever,
    and no modality is ever more than one record off its share.
    """

    def __init__(self, modalities: Sequence[str], *, seed: int = 0, ratios: Mapping[str, float] | None = None) -> None:
        groups = {m: [i for i, x in enumerate(modalities) if modality_of(x) == m] for m in MODALITIES}
        unknown = sorted({modality_of(x) for x in modalities} - set(MODALITIES))
        if unknown:
            raise ConfigError(f"unknown modalities {unknown}; expected {', '.join(MODALITIES)}")
        if ratios is None:
            ratios = {m: float(len(ix)) for m, ix in groups.items() if ix}
        missing = [m for m, r in ratios.items() if r > 0 and not groups.get(m)]
        if missing:
            raise ConfigError(f"modality ratio asks for {', '.join(missing)} but the data has no such records")
        total = sum(ratios.values())
        if total <= 0:
            raise ConfigError(f"modality ratios must have a positive sum, got {dict(ratios)}")
        self.ratios = {m: r / total for m, r in ratios.items() if r > 0}
        self._streams = {m: _Stream(groups[m], seed + k) for k, m in enumerate(MODALITIES) if m in self.ratios}
        self._carry = dict.fromkeys(self.ratios, 0.0)

    def _counts(self, n: int) -> dict[str, int]:
        """Each of the n places goes to the modality furthest behind its share (`carry`: share owed so far)."""
        counts = dict.fromkeys(self.ratios, 0)
        for _ in range(n):
            for m, r in self.ratios.items():
                self._carry[m] += r
            m = max(self._carry, key=lambda m: (self._carry[m], -MODALITIES.index(m)))
            self._carry[m] -= 1.0
            counts[m] += 1
        return counts

    def sample(self, n: int) -> list[int]:
        out: list[int] = []
        for m, count in self._counts(n).items():
            out.extend(self._streams[m].take(count))
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"streams": {m: s.state() for m, s in self._streams.items()}, "carry": dict(self._carry)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for m, s in state["streams"].items():
            self._streams[m].restore(s)
        self._carry = {m: float(v) for m, v in state["carry"].items()}
