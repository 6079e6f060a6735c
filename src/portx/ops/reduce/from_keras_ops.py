"""keras.ops reductions and softmax in functional graphs (``ops.mean(x, axis=1)``, ``ops.softmax``) -> IR.

Keras reduces over ``axis`` (int, list or None for all) with ``keepdims``; result dtypes are
Keras' (mean of ints is float32, argmax is int32, sum of int32 stays int32), so each rule casts the
IR result to the dtype Keras recorded when the IR op's torch-style dtype differs.

Example:
    >>> keras.ops.mean(x, axis=(1, 2), keepdims=True)   # -> mean(%x) {axes=(1, 2), keepdims=True}
"""
from __future__ import annotations

import numpy as np

from .._util import kind, named_rule, norm_axes, norm_axis
from ..elementwise import BINARY
from ..elementwise.from_keras_ops import cast_to, out_dtype
from ..elementwise.unary import UNARY
from ..reduce import CUMSUM, ARGMAX, ARGMIN, LOG_SOFTMAX, REDUCE, SOFTMAX, STD, VAR, VECTOR_NORM

__all__ = []


def _axes(call, x):
    """IR axes of the operation's ``axis`` (None or [] -> every axis)."""
    return norm_axes(getattr(call.layer, "axis", None), x.type.rank) if x.type.rank else ()


def _reduce_rule(ir_name, float_input):
    op = REDUCE[ir_name]

    def rule(call):
        x, dtype = call.inputs[0], out_dtype(call)
        if float_input or kind(dtype) == kind(x.type.dtype):
            x = cast_to(call, x, dtype)
        y = call.emit(op, [x], {"axes": _axes(call, x), "keepdims": bool(call.layer.keepdims)})
        return cast_to(call, y, dtype)
    return named_rule(rule, ir_name, "from_keras")


# keras.ops class -> (IR reduce name, compute in the output dtype)
_REDUCE = {"Sum": ("sum", False), "Mean": ("mean", True), "Prod": ("prod", False), "Max": ("amax", False),
           "Amax": ("amax", False), "Min": ("amin", False), "Amin": ("amin", False), "Any": ("any", False),
           "All": ("all", False), "Logsumexp": ("logsumexp", True)}

for _cls, (_name, _float) in _REDUCE.items():
    REDUCE[_name].imports("keras", f"ops.{_cls}")(_reduce_rule(_name, _float))


def _moment_rule(op):
    def rule(call):
        x = cast_to(call, call.inputs[0], out_dtype(call))
        return call.emit(op, [x], {"axes": _axes(call, x), "keepdims": bool(call.layer.keepdims), "correction": 0.0})
    return named_rule(rule, op.name, "from_keras")


VAR.imports("keras", "ops.Var")(_moment_rule(VAR))
STD.imports("keras", "ops.Std")(_moment_rule(STD))


def _arg_rule(op):
    def rule(call):
        x, axis = call.inputs[0], call.layer.axis
        attrs = {"axis": None if axis is None else norm_axis(axis, x.type.rank), "keepdims": bool(call.layer.keepdims)}
        return cast_to(call, call.emit(op, [x], attrs), out_dtype(call))
    return named_rule(rule, op.name, "from_keras")


ARGMAX.imports("keras", "ops.Argmax")(_arg_rule(ARGMAX))
ARGMIN.imports("keras", "ops.Argmin")(_arg_rule(ARGMIN))


def _softmax_axes(call, x):
    axis = call.layer.axis
    if axis is None:
        return tuple(range(x.type.rank))
    return tuple(norm_axis(int(a), x.type.rank) for a in np.atleast_1d(axis))


@SOFTMAX.imports("keras", "ops.Softmax")
def _softmax_from_keras(call):
    """One axis is ``softmax``; several are ``exp(x - logsumexp(x, axes))``, as keras.activations does."""
    x = cast_to(call, call.inputs[0], out_dtype(call))
    axes = _softmax_axes(call, x)
    if len(axes) == 1:
        return call.emit(SOFTMAX, [x], {"axis": axes[0]})
    lse = call.emit(REDUCE["logsumexp"], [x], {"axes": tuple(sorted(axes)), "keepdims": True})
    return call.emit(UNARY["exp"], [call.emit(BINARY["sub"], [x, lse])])


@LOG_SOFTMAX.imports("keras", "ops.LogSoftmax")
def _log_softmax_from_keras(call):
    x = cast_to(call, call.inputs[0], out_dtype(call))
    axes = _softmax_axes(call, x)
    if len(axes) == 1:
        return call.emit(LOG_SOFTMAX, [x], {"axis": axes[0]})
    lse = call.emit(REDUCE["logsumexp"], [x], {"axes": tuple(sorted(axes)), "keepdims": True})
    return call.emit(BINARY["sub"], [x, lse])


@VECTOR_NORM.imports("keras", "ops.Norm")
def _norm_from_keras(call):
    """Vector norms (one axis, or every axis of a 1-d tensor); matrix norms are refused."""
    x, ord_ = call.inputs[0], call.layer.ord
    x = cast_to(call, x, out_dtype(call))
    axes = _axes(call, x)
    if len(axes) != 1 and not (call.layer.axis is None and ord_ is None):
        call.unsupported("matrix norms (two axes) are not supported")
    if isinstance(ord_, str):
        call.unsupported(f"norm ord {ord_!r}")
    ord_ = 2.0 if ord_ is None else float(ord_)
    return call.emit(VECTOR_NORM, [x], {"axes": axes, "keepdims": bool(call.layer.keepdims), "ord": ord_})


@CUMSUM.imports("keras", "ops.Cumsum")
def _cumsum_from_keras(call):
    """``keras.ops.cumsum(x, axis=None, dtype=None)``; axis None (the flattened tensor) only on rank 1."""
    x, axis = call.inputs[0], call.layer.axis
    if axis is None and x.type.rank != 1:
        call.unsupported("cumsum with axis=None on a batch (it runs across samples); give an axis")
    axis = 0 if axis is None else axis
    y = call.emit(CUMSUM, [x], {"axis": norm_axis(int(axis), x.type.rank)})
    return cast_to(call, y, out_dtype(call))
