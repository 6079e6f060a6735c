"""Torch tensors as NumPy arrays on the frontend side: constants, source outputs and intermediates.

``Tensor.numpy()`` refuses bfloat16 and the float8 dtypes. bfloat16 is widened to float32 (portx folds and
compares it there); float8 keeps its dtype as ml_dtypes' (the IR holds float8_e4m3fn and float8_e5m2), read
through the uint8 of its width, so a float8 constant or output stays bit for bit torch's.

Example:
    >>> array_of(torch.tensor([1.5]).to(torch.float8_e4m3fn)).dtype
    dtype(float8_e4m3fn)
"""
from __future__ import annotations

import numpy as np

from ...ir.types import VIEWED_AS_INT

__all__ = ["array_of"]


def array_of(tensor, keep_bfloat16=False) -> np.ndarray:
    """``tensor`` (detached, on the host) as a NumPy array: bfloat16 as float32 (as ml_dtypes' bfloat16 with
    ``keep_bfloat16``: a parameter keeps its stored dtype), float8 as ml_dtypes' float8."""
    import ml_dtypes
    import torch

    tensor = tensor.detach().cpu().contiguous()
    name = str(tensor.dtype).removeprefix("torch.")
    if name == "bfloat16" and not keep_bfloat16:
        return tensor.float().numpy()
    if name in VIEWED_AS_INT:  # float8 and a kept bfloat16: through the integers of its width (ir/types.py)
        return tensor.view(getattr(torch, VIEWED_AS_INT[name][1])).numpy().view(getattr(ml_dtypes, name))
    return tensor.numpy()
