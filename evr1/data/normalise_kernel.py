"""The processor's `(x - mean) / std` on uint8 patches in one compiled pass (numba, imported on first use).

One pass reads each byte once and writes each float once: widening, subtraction and division stay in
registers, so a read costs about what a copy of its float32 output does. Each value is
`(float32(x) - mean[c]) / std[c]`, both operations IEEE float32 (no fast-math), the same operations
in the same order as the processor, hence the same bits. Compiled once for its one signature and kept
in numba's on-disk cache; it releases the GIL, so loader threads normalise side by side.
"""

from __future__ import annotations

import numba
import numpy as np

_SIGNATURE = "void(u1[:, :, :, ::1], f4[::1], f4[::1], f4[:, :, :, ::1])"


@numba.njit(_SIGNATURE, cache=True, nogil=True)
def normalise(data: np.ndarray, mean: np.ndarray, std: np.ndarray, out: np.ndarray) -> None:
    """`out[i, c, t, k] = (data[i, c, t', k] - mean[c]) / std[c]`, with `t' = t` or 0 when `data` stores one frame
    (an image, repeated over the temporal patch). `data` is `(seq, C, 1 or tp, P)`, `out` `(seq, C, tp, P)`."""
    seq, channels, stored, pp = data.shape
    frames = out.shape[2]
    for i in range(seq):
        for c in range(channels):
            mu, sigma = mean[c], std[c]
            for t in range(frames):
                src, dst = data[i, c, t if stored > 1 else 0], out[i, c, t]
                for k in range(pp):
                    dst[k] = (np.float32(src[k]) - mu) / sigma
