"""Reductions over axes (sum, mean, amax, var, argmax, vector_norm, ...) and softmax / log_softmax.

Reductions share one attribute form: ``axes`` (sorted non-negative ints; every axis when all are
reduced) and ``keepdims``. Result dtypes follow torch: sum and prod of bool or integer tensors
are int64, any/all are bool, argmax/argmin are int64. The plain reductions differ only by name and
are declared from one table, ``REDUCE_TABLE`` (NumPy meaning, ``keras.ops`` function, ATen names,
result dtype rule); ``from_torch.py`` and ``to_keras.py`` register their rules from the same rows.

Example IR:
    %m: float32[2x1x1] = mean(%x) {axes=(1, 2), keepdims=True}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import kind, named_rule, same_type

__all__ = ["CUMSUM", "REDUCE", "REDUCE_TABLE", "VAR", "STD", "ARGMAX", "ARGMIN", "VECTOR_NORM", "SOFTMAX", "LOG_SOFTMAX"]


def _reduced_shape(shape, axes, keepdims):
    """``shape`` with ``axes`` removed, or set to 1 when ``keepdims``."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _attach(op, infer, reference):
    """Attach rules made by a factory, renamed ``_<op>_type`` / ``_<op>_numpy`` so tracebacks name the op."""
    op.infer(named_rule(infer, op.name, "type"))
    op.reference(named_rule(reference, op.name, "numpy"))
    return op


def _result_dtype(rule, dtype):
    """Torch's result dtype: "widen" bool/ints to int64, "bool" (uint8 stays), "float" for ints."""
    if rule == "widen":
        return "int64" if kind(dtype) < 2 else dtype
    if rule == "bool":
        return "uint8" if dtype == "uint8" else "bool"
    return "float32" if rule == "float" and kind(dtype) < 2 else dtype


#: name: (NumPy meaning, keras.ops function, ATen names, result dtype rule)
REDUCE_TABLE = {
    "sum": (np.sum, "ops.sum", ["aten::sum"], "widen"),
    "mean": (np.mean, "ops.mean", ["aten::mean"], None),
    "prod": (np.prod, "ops.prod", ["aten::prod"], "widen"),
    "amax": (np.max, "ops.max", ["aten::amax"], None),
    "amin": (np.min, "ops.min", ["aten::amin"], None),
    "any": (np.any, "ops.any", ["aten::any"], "bool"),
    "all": (np.all, "ops.all", ["aten::all"], "bool"),
    "logsumexp": (_logsumexp, "ops.logsumexp", ["aten::logsumexp"], "float"),
}


def _make_reduce(name, ref, dtype_rule):
    op = OpDef(name, ("x",), {"axes": REQUIRED, "keepdims": False}, family="reduce")

    def infer(x, *, axes, keepdims):
        if any(not 0 <= a < max(x.rank, 1) for a in axes):
            raise ValueError(f"{name}: axes {axes} out of range for rank {x.rank}")
        shape = _reduced_shape(x.shape, axes, keepdims)
        return x.with_shape(shape).with_dtype(_result_dtype(dtype_rule, x.dtype))

    def reference(x, *, axes, keepdims):
        dtype = str(x.dtype)
        out = _result_dtype(dtype_rule, dtype)
        wide = x.astype(np.float64) if kind(dtype) >= 2 else x.astype(out) if out != "bool" else x
        return np.asarray(ref(wide, axis=tuple(axes), keepdims=keepdims)).astype(out)

    return _attach(op, infer, reference)


REDUCE = {name: _make_reduce(name, ref, rule) for name, (ref, _, _, rule) in REDUCE_TABLE.items()}


def _arg_op(name, ref):
    op = OpDef(name, ("x",), {"axis": None, "keepdims": False}, family="reduce",
               doc=f"Index (int64) of the first {name[3:]}imum; axis None flattens first.")

    def infer(x, *, axis, keepdims):
        if axis is None:
            return x.with_shape((1,) * x.rank if keepdims else ()).with_dtype("int64")
        return x.with_shape(_reduced_shape(x.shape, (axis,), keepdims)).with_dtype("int64")

    def reference(x, *, axis, keepdims):
        return np.asarray(ref(x, axis=axis, keepdims=keepdims)).astype(np.int64)

    return _attach(op, infer, reference)


ARGMAX = _arg_op("argmax", np.argmax)
ARGMIN = _arg_op("argmin", np.argmin)


def _moment_op(name, root):
    op = OpDef(name, ("x",), {"axes": REQUIRED, "keepdims": False, "correction": 1.0}, family="reduce",
               doc=f"{'Standard deviation' if root else 'Variance'} with divisor max(n - correction, 0).")

    def infer(x, *, axes, keepdims, correction):
        return x.with_shape(_reduced_shape(x.shape, axes, keepdims))

    def reference(x, *, axes, keepdims, correction):
        x64 = x.astype(np.float64)
        n = int(np.prod([x.shape[a] for a in axes]))
        dev = ((x64 - x64.mean(axis=tuple(axes), keepdims=True)) ** 2).sum(axis=tuple(axes), keepdims=keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):
            var = dev / max(n - correction, 0)
        return (np.sqrt(var) if root else var).astype(x.dtype)

    return _attach(op, infer, reference)


VAR = _moment_op("var", False)
STD = _moment_op("std", True)

VECTOR_NORM = OpDef("vector_norm", ("x",), {"axes": REQUIRED, "keepdims": False, "ord": 2.0}, family="reduce",
                    doc="sum(|x|**ord) ** (1/ord) over axes; ord inf/-inf is max/min |x|, ord 0 counts nonzeros.")


@VECTOR_NORM.infer
def _vector_norm_type(x, *, axes, keepdims, ord):
    return x.with_shape(_reduced_shape(x.shape, axes, keepdims))


@VECTOR_NORM.reference
def _vector_norm_numpy(x, *, axes, keepdims, ord):
    a = np.abs(x.astype(np.float64))
    reduce = {np.inf: np.max, -np.inf: np.min}.get(ord)
    if reduce is not None:
        out = reduce(a, axis=tuple(axes), keepdims=keepdims)
    elif ord == 0:
        out = np.sum(a != 0, axis=tuple(axes), keepdims=keepdims)
    else:
        out = np.sum(a ** ord, axis=tuple(axes), keepdims=keepdims) ** (1.0 / ord)
    return np.asarray(out).astype(x.dtype)


# -- softmax ---------------------------------------------------------------------------------------
SOFTMAX = OpDef("softmax", ("x",), {"axis": REQUIRED}, family="reduce", doc="exp(x) / sum(exp(x)) along axis.")
LOG_SOFTMAX = OpDef("log_softmax", ("x",), {"axis": REQUIRED}, family="reduce", doc="x - logsumexp(x) along axis.")
SOFTMAX.infer(same_type)
LOG_SOFTMAX.infer(same_type)


@SOFTMAX.reference
def _softmax_numpy(x, *, axis):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


@LOG_SOFTMAX.reference
def _log_softmax_numpy(x, *, axis):
    x64 = x.astype(np.float64)
    return (x64 - _logsumexp(x64, axis=axis, keepdims=True)).astype(x.dtype)


CUMSUM = OpDef("cumsum", ("x",), {"axis": REQUIRED, "reverse": False}, family="reduce", layout="axis",
               doc="running sum along one axis (from the end when reverse); bool and ints sum as int64, as in torch")


@CUMSUM.infer
def _cumsum_type(x, *, axis, reverse):
    return x if kind(x.dtype) == 2 else x.with_dtype("int64")


@CUMSUM.reference
def _cumsum_numpy(x, *, axis, reverse):
    dtype = x.dtype if kind(str(x.dtype)) == 2 else np.int64
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    return flip(np.cumsum(flip(x), axis=axis, dtype=dtype))
