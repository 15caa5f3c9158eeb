"""The compact model-ready form: uint8 pixels already resized and laid out in the processor's patch order.

A Qwen-VL processor turns frames into `pixel_values` of shape `(seq, C * tp * ps * ps)`: rows are
merged patches in `(t, h/m, w/m, m, m)` order, columns `(channel, frame in the temporal patch,
patch row, patch column)`. The same permutation applied to the uint8 frames gives `Patches`
(`(seq, C, tp, ps*ps)` uint8; an image stores its single frame once, `tp` = 1). `normalise` then
computes the processor's `(x - 255*mean) / (255*std)` in float32 with the processor's own
constants (one compiled pass, `normalise_kernel`), so the result is bitwise what the HF processor returns.
"""

from __future__ import annotations

import math
import mmap
import sys
import threading
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from evr1.data.frame_sampling import Geometry

_POOL_MIN_BYTES = 4 << 20  # smaller outputs are cheap to allocate


@dataclass(frozen=True)
class Patches:
    """uint8 pixels in patch order, `(seq, C, stored_tp, ps*ps)`, and the grid they cover."""

    data: torch.Tensor
    grid_thw: tuple[int, int, int]
    temporal_patch_size: int  # frames per temporal patch in the model input (a stored image repeats its one frame)

    @property
    def out_shape(self) -> tuple[int, int]:
        seq, channels, _, pp = self.data.shape
        return seq, channels * self.temporal_patch_size * pp


def video_patches(frames: torch.Tensor, geometry: Geometry) -> Patches:
    """Resized uint8 frames `(T, C, H, W)` in the processor's patch order (last frame repeated to fill a pair)."""
    ps, m, tp = geometry.patch_size, geometry.merge_size, geometry.temporal_patch_size
    if pad := -frames.shape[0] % tp:
        frames = torch.cat([frames, frames[-1:].expand(pad, -1, -1, -1)])
    t, c, h, w = frames.shape
    gt, gh, gw = t // tp, h // ps, w // ps
    x = frames.reshape(gt, tp, c, gh // m, m, ps, gw // m, m, ps).permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return Patches(x.reshape(gt * gh * gw, c, tp, ps * ps).contiguous(), (gt, gh, gw), tp)


def image_patches(image: torch.Tensor, geometry: Geometry) -> Patches:
    """A resized uint8 image `(C, H, W)` in the processor's patch order, its frame stored once."""
    ps, m = geometry.patch_size, geometry.merge_size
    c, h, w = image.shape
    gh, gw = h // ps, w // ps
    x = image.reshape(c, gh // m, m, ps, gw // m, m, ps).permute(1, 4, 2, 5, 0, 3, 6)
    return Patches(x.reshape(gh * gw, c, 1, ps * ps).contiguous(), (1, gh, gw), geometry.temporal_patch_size)


@dataclass(frozen=True)
class Normaliser:
    """The processor's pixel arithmetic, with its constants computed exactly as the processor does."""

    mean: torch.Tensor | None  # (C,) float32, already x255 (None: no normalisation)
    std: torch.Tensor | None
    scale: float | None  # rescale without normalisation

    @classmethod
    def of(cls, processor: object) -> Normaliser:
        do_rescale = bool(getattr(processor, "do_rescale", True))
        do_normalize = bool(getattr(processor, "do_normalize", True))
        factor = float(getattr(processor, "rescale_factor", 1 / 255))
        if do_normalize:
            mean, std = torch.tensor(processor.image_mean), torch.tensor(processor.image_std)
            if do_rescale:  # the fused form of transformers' `rescale_and_normalize`
                mean, std = mean * (1.0 / factor), std * (1.0 / factor)
            return cls(mean.to(torch.float32).reshape(-1), std.to(torch.float32).reshape(-1), None)
        return cls(None, None, factor if do_rescale else None)

    def identity(self) -> dict:
        """What the arithmetic depends on (part of a cache key)."""
        as_list = lambda t: None if t is None else [float(v) for v in t]
        return {"mean": as_list(self.mean), "std": as_list(self.std), "scale": self.scale}

    def apply(self, patches: Patches, out: torch.Tensor | None = None) -> torch.Tensor:
        """float32 model input `(seq, C * tp * ps * ps)`, written into `out` when given (reused buffers skip page faults).

        The same float32 operations as the processor in the same order, hence the same bits: with
        normalisation, one compiled pass (`normalise_kernel`); else a rescale or a widening copy.
        """
        seq, c, stored, pp = patches.data.shape
        tp = patches.temporal_patch_size
        if stored not in (1, tp):
            raise ValueError(f"patches store {stored} frames per temporal patch, the model takes {tp}")
        if out is None:
            out = torch.empty(patches.out_shape, dtype=torch.float32)
        elif tuple(out.shape) != patches.out_shape or out.dtype != torch.float32 or not out.is_contiguous():
            raise ValueError(f"out must be a contiguous float32 tensor of shape {patches.out_shape}, got {tuple(out.shape)} {out.dtype}")
        grid = out.view(seq, c, tp, pp)
        if self.mean is not None:
            from evr1.data.normalise_kernel import normalise

            mean, std = (t.expand(c).contiguous().numpy() for t in (self.mean, self.std))
            normalise(patches.data.contiguous().numpy(), mean, std, grid.numpy())
        elif self.scale is not None:
            torch.mul(patches.data.expand(-1, -1, tp, -1), self.scale, out=grid)
        else:
            grid.copy_(patches.data.expand(-1, -1, tp, -1))
        return out


class OutputPool:
    """Float32 output tensors on reusable memory: page faults on a fresh large tensor cost more than
    filling it, so a buffer is handed out again once no tensor (nor any view) uses it any more.

    A buffer is free when only the pool refers to it: a tensor made by `torch.frombuffer` holds a
    reference to its buffer for as long as its storage lives. Thread-safe.
    """

    def __init__(self, max_buffers: int = 8) -> None:
        self.max_buffers = max_buffers
        self._buffers: list[mmap.mmap] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:  # a copy in another process starts empty
        return {"max_buffers": self.max_buffers}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["max_buffers"])

    def empty(self, shape: tuple[int, ...]) -> torch.Tensor:
        numel = math.prod(shape)
        nbytes = numel * 4
        if nbytes < _POOL_MIN_BYTES or self.max_buffers == 0:
            return torch.empty(shape, dtype=torch.float32)
        with self._lock:
            buffer = self._take(nbytes)
            return torch.frombuffer(buffer, dtype=torch.float32, count=numel).view(shape)

    def _take(self, nbytes: int) -> mmap.mmap:
        bufs = self._buffers
        free = [i for i in range(len(bufs)) if sys.getrefcount(bufs[i]) == 2]  # the list's reference + the argument
        fits = [i for i in free if len(bufs[i]) >= nbytes]
        if fits:
            return bufs[min(fits, key=lambda i: len(bufs[i]))]
        buffer = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            buffer.madvise(mmap.MADV_HUGEPAGE)  # fewer, larger first-touch faults
        if len(bufs) < self.max_buffers:
            bufs.append(buffer)
        elif free:  # full: a free buffer too small for this output makes room
            bufs[min(free, key=lambda i: len(bufs[i]))] = buffer
        return buffer


def from_buffer(buffer: memoryview | bytes, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    """A tensor over `buffer` without copying (read-only: normalise or copy it, never write to it)."""
    if dtype not in ("uint8", "bfloat16"):
        raise ValueError(f"unknown cached dtype {dtype!r}")
    array = np.frombuffer(buffer, dtype=np.uint8)
    if not array.size:
        return torch.empty(shape, dtype=getattr(torch, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # read-only by contract: never written to
        tensor = torch.from_numpy(array)
    return tensor.view(getattr(torch, dtype)).view(shape)
