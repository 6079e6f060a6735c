"""Shape ops that move data without computing: reshape, permute, expand, concat, stack, split.

Note [recorded target shapes]: torch records the static type of every output, so the import
rules for view/flatten/unflatten/squeeze/unsqueeze/expand take the target shape from there
instead of re-deriving torch's rules (``-1``, squeezing a dim that is not 1, negative dims).
The driver checks each result against that type anyway; an op that leaves the input unchanged
imports as the input itself and adds no node.

Indexing and reordering (slice, select, gathers, tile, flip, roll) live in ``shape_index.py``.

Example IR:
    %y: float32[2x12] = reshape(%x) {shape=(2, 12)}
    %a: float32[2x1x4], %b: float32[2x2x4] = split(%x) {axis=1, sizes=(1, 2)}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import norm_axis
from ..elementwise import CAST

__all__ = ["RESHAPE", "PERMUTE", "EXPAND", "CONCAT", "STACK", "SPLIT"]


def _recorded_types(call) -> list:
    """Every output type torch recorded for the call (multi-output ops such as split)."""
    types = []
    while True:
        try:
            types.append(call.out_type(len(types)))
        except IndexError:
            return types


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


@RESHAPE.emits("keras-jax")
def _reshape_to_keras(node, k):
    k.assign(node, f"ops.reshape({k.ref(node.inputs[0])}, {k.lit(tuple(node.attrs['shape']))})")


@RESHAPE.imports("torch", "aten::view", "aten::reshape", "aten::_unsafe_view", "aten::flatten", "aten::unflatten",
                 "aten::squeeze", "aten::unsqueeze")
def _reshape_from_aten(call):
    """All reshape-likes become one static reshape (Note [recorded target shapes])."""
    x = call.arg("self", call.arg("input"))
    shape = call.out_type().shape
    return x if shape == x.type.shape else call.emit(RESHAPE, [x], {"shape": shape})


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


@PERMUTE.emits("keras-jax")
def _permute_to_keras(node, k):
    k.assign(node, f"ops.transpose({k.ref(node.inputs[0])}, axes={k.lit(tuple(node.attrs['perm']))})")


def _aten_perm(call, rank) -> tuple:
    """The permutation behind permute / transpose / t / numpy_T / swapaxes / mT."""
    name = call.node.target._schema.name
    perm = list(range(rank))
    if name == "aten::permute":
        return tuple(norm_axis(d, rank) for d in call.arg("dims"))
    if name in ("aten::numpy_T", "aten::t"):
        return tuple(reversed(perm))
    if name == "aten::mT":
        a, b = rank - 2, rank - 1
    elif name == "aten::transpose":
        a, b = norm_axis(call.arg("dim0"), rank), norm_axis(call.arg("dim1"), rank)
    else:  # swapaxes / swapdims
        a = norm_axis(call.arg("axis0", call.arg("dim0")), rank)
        b = norm_axis(call.arg("axis1", call.arg("dim1")), rank)
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


@PERMUTE.imports("torch", "aten::permute", "aten::transpose", "aten::t", "aten::numpy_T", "aten::mT",
                 "aten::swapaxes", "aten::swapdims")
def _permute_from_aten(call):
    x = call.arg("self")
    perm = _aten_perm(call, x.type.rank)
    return x if perm == tuple(range(x.type.rank)) else call.emit(PERMUTE, [x], {"perm": perm})


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


@EXPAND.emits("keras-jax")
def _expand_to_keras(node, k):
    k.assign(node, f"ops.broadcast_to({k.ref(node.inputs[0])}, {k.lit(tuple(node.attrs['shape']))})")


@EXPAND.imports("torch", "aten::expand", "aten::expand_as", "aten::broadcast_to")
def _expand_from_aten(call):
    """The target comes from torch's record, with -1 resolved (Note [recorded target shapes])."""
    x = call.arg("self")
    shape = call.out_type().shape
    return x if shape == x.type.shape else call.emit(EXPAND, [x], {"shape": shape})


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


@CONCAT.emits("keras-jax")
def _concat_to_keras(node, k):
    items = ", ".join(k.ref(v) for v in node.inputs)
    k.assign(node, f"ops.concatenate([{items}], axis={node.attrs['axis']})")


def _joined_inputs(call, out_dtype):
    """The tensors of cat/stack, cast to torch's promoted dtype."""
    return [x if x.type.dtype == out_dtype else call.emit(CAST, [x], {"dtype": out_dtype})
            for x in call.arg("tensors")]


@CONCAT.imports("torch", "aten::cat", "aten::concat", "aten::concatenate")
def _concat_from_aten(call):
    """torch.cat promotes dtypes and skips legacy empty ``(0,)`` tensors; the IR op does neither."""
    out = call.out_type()
    xs = [x for x in _joined_inputs(call, out.dtype) if x.type.shape != (0,) or out.rank == 1]
    if not xs:
        call.unsupported("cat of only empty tensors")
    axis = norm_axis(call.arg("dim", 0), out.rank)
    return xs[0] if len(xs) == 1 else call.emit(CONCAT, xs, {"axis": axis})


STACK = OpDef("stack", ("*xs",), {"axis": REQUIRED}, family="shape")


@STACK.infer
def _stack_type(*xs, axis):
    if any(x != xs[0] for x in xs):
        raise ValueError(f"stack needs equal types, got {[str(x) for x in xs]}")
    return xs[0].with_shape(xs[0].shape[:axis] + (len(xs),) + xs[0].shape[axis:])


@STACK.reference
def _stack_numpy(*xs, axis):
    return np.stack(xs, axis=axis)


@STACK.emits("keras-jax")
def _stack_to_keras(node, k):
    # A stored 0-d item is written as a Python number, which symbolic ops.stack cannot take.
    items = ", ".join(f"ops.convert_to_tensor({k.ref(v)}, {k.lit(v.type.dtype)})" if v.type.rank == 0 and
                      k.is_param(v) else k.ref(v) for v in node.inputs)
    k.assign(node, f"ops.stack([{items}], axis={node.attrs['axis']})")


@STACK.imports("torch", "aten::stack")
def _stack_from_aten(call):
    out = call.out_type()
    return call.emit(STACK, _joined_inputs(call, out.dtype), {"axis": norm_axis(call.arg("dim", 0), out.rank)})


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


@SPLIT.emits("keras-jax")
def _split_to_keras(node, k):
    """keras' split takes split points, like numpy: sizes (1, 2, 1) -> [1, 3]."""
    x, sizes = k.ref(node.inputs[0]), node.attrs["sizes"]
    if len(sizes) == 1:  # one piece is the input; a one-item list would not unpack
        k.assign(node, x)
        return
    points = [int(p) for p in np.cumsum(sizes)[:-1]]
    k.assign(node, f"ops.split({x}, {k.lit(points)}, axis={node.attrs['axis']})")


@SPLIT.imports("torch", "aten::split", "aten::split_with_sizes", "aten::unsafe_split",
               "aten::unsafe_split_with_sizes", "aten::chunk")
def _split_from_aten(call):
    """Piece sizes are read from torch's recorded outputs, which settles the ragged last chunk."""
    x = call.arg("self")
    axis = norm_axis(call.arg("dim", 0), x.type.rank)
    sizes = tuple(t.shape[axis] for t in _recorded_types(call))
    if len(sizes) == 1:
        return [x]
    return call.emit(SPLIT, [x], {"sizes": sizes, "axis": axis})


@SPLIT.imports("torch", "aten::unbind")
def _unbind_from_aten(call):
    """unbind = split into size-1 pieces, each reshaped to drop the axis."""
    x = call.arg("self")
    axis = norm_axis(call.arg("dim", 0), x.type.rank)
    n = x.type.shape[axis]
    pieces = [x] if n == 1 else call.emit(SPLIT, [x], {"sizes": (1,) * n, "axis": axis})
    shape = x.type.shape[:axis] + x.type.shape[axis + 1:]
    return [call.emit(RESHAPE, [p], {"shape": shape}) for p in pieces]
