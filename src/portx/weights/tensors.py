"""Torch tensors as NumPy arrays and back, one conversion for every layer: the torch frontend's constants, source
outputs and intermediates, the targets' torch modules run on NumPy inputs (torch_xla/runtime.py, forward_cut.py's
blocks cut out of a loaded module) and the lazy stores' views of a mapped file (safetensors.py).

``Tensor.numpy()`` and ``torch.from_numpy`` refuse bfloat16 and the float8 dtypes (ml_dtypes' in NumPy): they
cross as the integers of their width (``VIEWED_AS_INT`` in ir/types.py), bit for bit, so a parameter keeps its
stored dtype and an output's dtype is checked as the model computes it.

Note [one tensor conversion]: the frontends and the targets are one layer and do not import each other
(tests/test_layering.py), so each had its own copy of this conversion (``array_of`` in frontends/torch/,
``numpy_of`` in targets/); weights/ is the lowest layer that holds torch tensors, and both import it from here.

Example:
    >>> array_of(tensor_of(np.ones(2, ml_dtypes.bfloat16))).dtype
    dtype(bfloat16)
    >>> array_of(torch.ones(2, dtype=torch.bfloat16), widen=True).dtype
    dtype('float32')
"""
from __future__ import annotations

import numpy as np

from ..ir.types import VIEWED_AS_INT

__all__ = ["array_of", "tensor_of"]


def array_of(tensor, widen=False) -> np.ndarray:
    """``tensor`` (detached, on the host) as a NumPy array; bfloat16 and float8 as ml_dtypes' (``widen``: bfloat16
    as float32, for a caller that computes in float32)."""
    import ml_dtypes
    import torch

    tensor = tensor.detach().cpu().contiguous()
    name = str(tensor.dtype).removeprefix("torch.")
    if name == "bfloat16" and widen:
        return tensor.float().numpy()
    if name in VIEWED_AS_INT:
        return tensor.view(getattr(torch, VIEWED_AS_INT[name][1])).numpy().view(getattr(ml_dtypes, name))
    return tensor.numpy()


def tensor_of(array, copy=True):
    """A torch tensor for a NumPy array (ml_dtypes' bfloat16 and float8 included); ``copy=False`` shares its memory
    (a mapped file's pages: the array must be writable, as a copy-on-write map is)."""
    import torch

    array = np.ascontiguousarray(array).reshape(np.shape(array))  # ascontiguousarray makes 0-d arrays 1-d
    name = array.dtype.name
    if name in VIEWED_AS_INT:  # through the integers of its width
        numpy_view, torch_view = VIEWED_AS_INT[name]
        ints = array.view(numpy_view)
        return torch.from_numpy(ints.copy() if copy else ints).view(getattr(torch, torch_view)).view(
            getattr(torch, name))
    return torch.from_numpy(array.copy() if copy else array)
