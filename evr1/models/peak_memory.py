"""Peak bytes of tensor storage allocated by torch operations inside a block (CPU or GPU, no allocator needed).

`PeakMemory` is a `TorchDispatchMode`: every operator's output storage is counted when it first
appears and uncounted when the storage is freed (a weak reference to it expires), so `peak` is
the most bytes that operators inside the block held alive at once, forward and backward (the
autograd engine runs CPU backward ops under the caller's modes). Storages that existed before the
block (parameters, inputs) are not counted; views and in-place results share their base's storage
and are counted once. It measures what torch allocates, not the process's RSS (allocator caches,
Python objects), which is what a GPU's memory holds of a training step apart from the caching
allocator's slack. Slow (Python per operator): for tests, benchmarks and the planner's validation.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class PeakMemory(TorchDispatchMode):
    """`with PeakMemory() as m: ...` then `m.peak` (bytes held at once at most) and `m.now` (still held)."""

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.now = 0
        self.peak = 0

    def _sweep(self) -> None:
        for key in [k for k, (ref, _) in self._live.items() if ref.expired()]:
            self.now -= self._live.pop(key)[1]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self._sweep()
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor) and leaf.device.type != "meta":
                storage = leaf.untyped_storage()
                key = storage._cdata
                if key not in self._live:
                    self._live[key] = (StorageWeakRef(storage), storage.nbytes())
                    self.now += storage.nbytes()
        self.peak = max(self.peak, self.now)
        return out
