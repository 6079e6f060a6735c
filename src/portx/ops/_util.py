"""Helpers shared by op families: broadcasting, dtype promotion, axis handling.

Example:
    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
"""
from __future__ import annotations

import numpy as np

from ..ir import TensorType

__all__ = ["broadcast_shapes", "promote", "norm_axis", "norm_axes", "same_type", "kind"]


def broadcast_shapes(*shapes) -> tuple:
    """NumPy broadcasting of static shapes; ValueError when incompatible."""
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def kind(dtype: str) -> int:
    """Category for promotion: 0 bool, 1 integer, 2 floating, 3 complex."""
    if dtype == "bool":
        return 0
    if dtype.startswith(("int", "uint")):
        return 1
    if dtype.startswith("complex"):
        return 3
    return 2


def promote(a: TensorType, b: TensorType) -> str:
    """Result dtype of a binary op, with torch's rule that 0-d tensors yield within a category."""
    if a.dtype == b.dtype:
        return a.dtype
    ka, kb = kind(a.dtype), kind(b.dtype)
    if ka != kb:
        return a.dtype if ka > kb else b.dtype
    if a.rank == 0 and b.rank > 0:
        return b.dtype
    if b.rank == 0 and a.rank > 0:
        return a.dtype
    if "bfloat16" in (a.dtype, b.dtype):
        return "float32"
    return str(np.promote_types(a.dtype, b.dtype))


def norm_axis(axis: int, rank: int) -> int:
    """A non-negative axis; ValueError when out of range."""
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)


def norm_axes(axes, rank: int) -> tuple:
    """Sorted non-negative axes; None or empty means all axes."""
    if axes is None or (isinstance(axes, (list, tuple)) and len(axes) == 0):
        return tuple(range(rank))
    if isinstance(axes, int):
        axes = (axes,)
    return tuple(sorted(norm_axis(a, rank) for a in axes))


def same_type(x: TensorType, **_attrs) -> TensorType:
    """Shape rule for ops whose output looks like their first input."""
    return x
