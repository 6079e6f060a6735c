"""Shape ops that move data without computing: reshape, permute, expand, concat, stack, split.

This module declares the OpDefs with their shape rules and NumPy references; indexing and
reordering (slice, select, gathers, tile, flip, roll) are declared in ``index.py``. The rules for
both are beside them: ``from_torch.py``, ``to_keras.py``, ``from_keras.py`` (merge and reshaping
layers), ``from_keras_ops.py``, ``from_jax.py`` and ``to_torch.py``.

Example IR:
    %y: float32[2x12] = reshape(%x) {shape=(2, 12)}
    %a: float32[2x1x4], %b: float32[2x2x4] = split(%x) {axis=1, sizes=(1, 2)}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef

__all__ = ["RESHAPE", "PERMUTE", "EXPAND", "CONCAT", "STACK", "SPLIT"]


RESHAPE = OpDef("reshape", ("x",), {"shape": REQUIRED}, family="shape",
                doc="Row-major reshape to a fully static shape (no -1).")


@RESHAPE.infer
def _reshape_type(x, *, shape):
    if any(not isinstance(d, int) or d < 0 for d in shape) or int(np.prod(shape)) != int(np.prod(x.shape)):
        raise ValueError(f"cannot reshape {x.shape} to {tuple(shape)}")
    return x.with_shape(shape)


@RESHAPE.reference
def _reshape_numpy(x, *, shape):
    return np.reshape(x, shape)


PERMUTE = OpDef("permute", ("x",), {"perm": REQUIRED}, family="shape",
                doc="Output axis i is input axis perm[i] (numpy.transpose).")


@PERMUTE.infer
def _permute_type(x, *, perm):
    if sorted(perm) != list(range(x.rank)):
        raise ValueError(f"perm {tuple(perm)} is not a permutation of the {x.rank} axes")
    return x.with_shape(tuple(x.shape[p] for p in perm))


@PERMUTE.reference
def _permute_numpy(x, *, perm):
    return np.transpose(x, perm)


EXPAND = OpDef("expand", ("x",), {"shape": REQUIRED}, family="shape",
               doc="NumPy broadcast_to a static shape (torch expand after resolving -1).")


@EXPAND.infer
def _expand_type(x, *, shape):
    if len(shape) < x.rank or any(s != d and s != 1 for s, d in zip(x.shape[::-1], tuple(shape)[::-1])):
        raise ValueError(f"cannot expand {x.shape} to {tuple(shape)}")
    return x.with_shape(shape)


@EXPAND.reference
def _expand_numpy(x, *, shape):
    return np.broadcast_to(x, shape).copy()


CONCAT = OpDef("concat", ("*xs",), {"axis": REQUIRED}, family="shape")


@CONCAT.infer
def _concat_type(*xs, axis):
    first = xs[0]
    for x in xs[1:]:
        if x.rank != first.rank or x.dtype != first.dtype or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != axis):
            raise ValueError(f"concat on axis {axis}: {x} does not match {first}")
    return first.with_shape(first.shape[:axis] + (sum(x.shape[axis] for x in xs),) + first.shape[axis + 1:])


@CONCAT.reference
def _concat_numpy(*xs, axis):
    return np.concatenate(xs, axis=axis)


STACK = OpDef("stack", ("*xs",), {"axis": REQUIRED}, family="shape")


@STACK.infer
def _stack_type(*xs, axis):
    if any(x != xs[0] for x in xs):
        raise ValueError(f"stack needs equal types, got {[str(x) for x in xs]}")
    return xs[0].with_shape(xs[0].shape[:axis] + (len(xs),) + xs[0].shape[axis:])


@STACK.reference
def _stack_numpy(*xs, axis):
    return np.stack(xs, axis=axis)


SPLIT = OpDef("split", ("x",), {"sizes": REQUIRED, "axis": REQUIRED}, outputs="variadic", family="shape",
              doc="Consecutive pieces of the given sizes along axis; one output per size.")


@SPLIT.infer
def _split_type(x, *, sizes, axis):
    if sum(sizes) != x.shape[axis] or any(s < 0 for s in sizes):
        raise ValueError(f"split sizes {tuple(sizes)} do not add up to {x.shape[axis]} on axis {axis}")
    return [x.with_shape(x.shape[:axis] + (s,) + x.shape[axis + 1:]) for s in sizes]


@SPLIT.reference
def _split_numpy(x, *, sizes, axis):
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
