"""NumPy arrays as torch tensors and back, for running a torch module on NumPy inputs (torch_xla/runtime.py, and
forward_cut.py's blocks cut out of a loaded module).

A module of its own, outside the ``torch_xla`` package: ``base.py`` imports ``forward_cut``, and importing
anything in ``torch_xla/`` first runs its ``__init__``, which imports ``base`` (tests/test_layering.py rejects that
cycle).

Example:
    >>> numpy_of(tensor_of(np.ones(2, ml_dtypes.bfloat16))).dtype
    dtype(bfloat16)
"""
from __future__ import annotations

import numpy as np

from ..ir.types import VIEWED_AS_INT

__all__ = ["tensor_of", "numpy_of"]


def tensor_of(array):
    """A torch tensor for a NumPy array (ml_dtypes bfloat16 and float8 included)."""
    import torch

    array = np.ascontiguousarray(array).reshape(np.shape(array))  # ascontiguousarray makes 0-d arrays 1-d
    name = str(array.dtype)
    if name in VIEWED_AS_INT:
        return torch.from_numpy(array.view(VIEWED_AS_INT[name][0]).copy()).view(getattr(torch, name))
    return torch.from_numpy(array.copy())


def numpy_of(tensor) -> np.ndarray:
    """A NumPy array for a tensor; bfloat16 and float8 stay so (ml_dtypes'), as the keras-jax target and
    ``tensor_of`` hold them, so an output's dtype is checked as the model computes it."""
    import ml_dtypes
    import torch

    tensor = tensor.detach().cpu()
    name = str(tensor.dtype).removeprefix("torch.")
    if name in VIEWED_AS_INT:
        return tensor.view(getattr(torch, VIEWED_AS_INT[name][1])).numpy().view(getattr(ml_dtypes, name))
    return tensor.numpy()
