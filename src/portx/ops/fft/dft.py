"""The discrete Fourier transform as constant matrices: how the torch-xla emit rules keep FFTs on the device.

Note [DFT as matmul]: PyTorch/XLA has no lowering for ATen's ``_fft_*`` ops, so ``torch.fft`` calls
leave the device (the CPU fallback). A DFT along one axis of n samples is a product with the n x n
matrix ``exp(sign * 2 pi i j k / n)``; written on (real, imag) parts it is four real matmuls with
``cos`` and ``sin`` tables, which XLA runs on the TPU's matrix unit. The inverse of a onesided
transform (``fft_c2r``) reads n // 2 + 1 bins and doubles every bin but the first and (for even n)
the Nyquist one, whose sines vanish, so their imaginary parts are ignored as torch ignores them.
The tables grow as n squared, so the emit rules use them up to ``DFT_MAX`` samples per axis and
``torch.fft`` beyond.

Example: ``dft_tables(4, -1)[0] @ [1, 0, 0, 0]`` is ``[1, 1, 1, 1]`` (the transform of an impulse).
"""
from __future__ import annotations

import numpy as np

__all__ = ["DFT_MAX", "dft_tables", "irfft_tables"]

#: the longest axis transformed with constant tables (two 1024 x 1024 float32 tables: 8 MB)
DFT_MAX = 1024


def dft_tables(n, sign, bins=None):
    """(cos, sign * sin) tables, (n, bins): ``x @ cos + i x @ sin`` is the DFT with ``exp(sign * 2 pi i j k / n)``."""
    bins = n if bins is None else bins
    angle = 2 * np.pi * np.outer(np.arange(n), np.arange(bins)) / n
    return np.cos(angle).astype(np.float32), (sign * np.sin(angle)).astype(np.float32)


def irfft_tables(bins, n):
    """(cos, sin) tables (bins, n) of the inverse onesided DFT: ``re @ cos - im @ sin`` (Note [DFT as matmul])."""
    weight = np.full(bins, 2.0)
    weight[0] = 1.0
    if n % 2 == 0 and bins > n // 2:
        weight[n // 2] = 1.0
    weight[n // 2 + 1:] = 0.0  # bins past n // 2 are not read
    angle = 2 * np.pi * np.outer(np.arange(bins), np.arange(n)) / n
    return (weight[:, None] * np.cos(angle)).astype(np.float32), (weight[:, None] * np.sin(angle)).astype(np.float32)
