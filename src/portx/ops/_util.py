"""Helpers shared by op families: broadcasting, dtype promotion, axis handling.

Example:
    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
"""
from __future__ import annotations

import functools

import numpy as np

from ..ir import TensorType

__all__ = ["broadcast_shapes", "promote", "norm_axis", "norm_axes", "same_type", "kind", "channels_last_perm",
           "channels_first_perm", "spatial_shape", "honors_channels_last"]


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


# -- channels_last (Note [channels_last attribute]) --------------------------------------------
# Ops with an implicit channel axis (conv, pools, batch/group norm, resize) are declared for
# (N, C, *spatial) like ATen and carry ``channels_last`` (default False): when True the same op
# reads and writes (N, *spatial, C). Weights keep their torch layouts either way. Shape rules and
# NumPy references are written once for channels-first and wrapped by ``honors_channels_last``.


def channels_last_perm(rank: int) -> tuple:
    """The permute taking (N, C, *spatial) to (N, *spatial, C): ``channels_last_perm(4) == (0, 2, 3, 1)``."""
    return (0,) + tuple(range(2, rank)) + (1,) if rank >= 2 else tuple(range(rank))


def channels_first_perm(rank: int) -> tuple:
    """The permute taking (N, *spatial, C) to (N, C, *spatial): ``channels_first_perm(4) == (0, 3, 1, 2)``."""
    return (0, rank - 1) + tuple(range(1, rank - 1)) if rank >= 2 else tuple(range(rank))


def spatial_shape(shape, channels_last=False) -> tuple:
    """The spatial sizes of an (N, C, *spatial) or (N, *spatial, C) shape."""
    return tuple(shape[1:-1]) if channels_last else tuple(shape[2:])


def _move(x, perm):
    if isinstance(x, TensorType):
        return x.with_shape(tuple(x.shape[p] for p in perm))
    return np.transpose(x, perm) if x is not None and np.ndim(x) == len(perm) else x


def honors_channels_last(rule):
    """Let a channels-first shape rule or NumPy reference also take ``channels_last=True``.

    Only the first input (the data) is moved; every output is moved back.
    Example: ``CONV.reference(honors_channels_last(conv_numpy))``.
    """
    @functools.wraps(rule)
    def wrapped(x, *rest, channels_last=False, **attrs):
        if not channels_last:
            return rule(x, *rest, **attrs)
        rank = x.rank if isinstance(x, TensorType) else np.ndim(x)
        out = rule(_move(x, channels_first_perm(rank)), *rest, **attrs)
        back = channels_last_perm(rank)
        return [_move(o, back) for o in out] if isinstance(out, (list, tuple)) else _move(out, back)
    return wrapped


# -- generated rules ---------------------------------------------------------------------------
def named_rule(rule, name: str, suffix: str):
    """Name a rule made by a factory after its op and direction, for tracebacks and ``portx ops``.

    Example: ``named_rule(emit, "add", "to_keras").__name__ == "_add_to_keras"``.
    """
    rule.__name__ = rule.__qualname__ = f"_{name}_{suffix}"
    return rule


__all__ += ["named_rule"]


def forward(node) -> int:
    """The axis of a running op (cumsum, cumprod, cummax, ...), which reaches an emitter only running forward:
    a reversed one is flipped around a forward one first (Note [decompositions] in passes/legalize/decompose.py)."""
    if node.attrs.get("reverse"):
        raise ValueError(f"{node.where()}: a reversed {node.op.name} reached the emitter; run the pipeline's "
                         "decompose pass first")
    return node.attrs["axis"]


__all__ += ["forward"]
