"""Reductions over axes (sum, mean, amax, var, argmax, vector_norm, ...) and softmax / log_softmax.

Reductions share one attribute form: ``axes`` (sorted non-negative ints; every axis when all are
reduced) and ``keepdims``. Result dtypes follow torch: sum and prod of bool or integer tensors
are int64, any/all are bool, argmax/argmin are int64. A ``dtype=`` argument becomes a cast of the
input first, which is what torch does. ``max.dim`` (values and indices) is amax plus argmax.

Example IR:
    %m: float32[2x1x1] = mean(%x) {axes=(1, 2), keepdims=True}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import kind, norm_axes, norm_axis, same_type
from ..elementwise import BINARY, CAST

__all__ = ["REDUCE", "VAR", "STD", "ARGMAX", "ARGMIN", "VECTOR_NORM", "SOFTMAX", "LOG_SOFTMAX"]


def _reduced_shape(shape, axes, keepdims):
    """``shape`` with ``axes`` removed, or set to 1 when ``keepdims``."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def _keras_axis(axes, rank):
    """``None`` when every axis is reduced (reads better), else the tuple."""
    return None if len(axes) == rank else tuple(axes)


def _axes_of(call, x):
    """Torch ``dim`` (int, list, empty list or None) as IR axes; None and [] reduce everything."""
    return norm_axes(call.arg("dim"), x.type.rank) if x.type.rank else ()


def _cast_to(call, x, dtype):
    """``x`` cast to ``dtype`` (torch's ``dtype=`` argument casts before reducing)."""
    return x if dtype is None or dtype == x.type.dtype else call.emit(CAST, [x], {"dtype": dtype})


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _attach(op, infer, reference, emit):
    """Attach rules made by a factory, renamed ``_<op>_type`` etc. so tracebacks name the op."""
    for fn, suffix in ((infer, "type"), (reference, "numpy"), (emit, "to_keras")):
        fn.__name__ = fn.__qualname__ = f"_{op.name}_{suffix}"
    op.infer(infer)
    op.reference(reference)
    op.emits("keras-jax")(emit)
    return op


def _result_dtype(rule, dtype):
    """Torch's result dtype: "widen" bool/ints to int64, "bool" (uint8 stays), "float" for ints."""
    if rule == "widen":
        return "int64" if kind(dtype) < 2 else dtype
    if rule == "bool":
        return "uint8" if dtype == "uint8" else "bool"
    return "float32" if rule == "float" and kind(dtype) < 2 else dtype


# name: (NumPy meaning, keras.ops function, ATen names, result dtype rule)
_REDUCE_TABLE = {
    "sum": (np.sum, "ops.sum", ["aten::sum"], "widen"),
    "mean": (np.mean, "ops.mean", ["aten::mean"], None),
    "prod": (np.prod, "ops.prod", ["aten::prod"], "widen"),
    "amax": (np.max, "ops.max", ["aten::amax"], None),
    "amin": (np.min, "ops.min", ["aten::amin"], None),
    "any": (np.any, "ops.any", ["aten::any"], "bool"),
    "all": (np.all, "ops.all", ["aten::all"], "bool"),
    "logsumexp": (_logsumexp, "ops.logsumexp", ["aten::logsumexp"], "float"),
}


def _make_reduce(name, ref, fn, aten, dtype_rule):
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

    def emit(node, k):
        x = node.inputs[0]
        axis = _keras_axis(node.attrs["axes"], x.type.rank)
        k.assign(node, f"{fn}({k.ref(x)}, axis={k.lit(axis)}, keepdims={k.lit(node.attrs['keepdims'])})")

    def import_torch(call):
        x = _cast_to(call, call.arg("self"), call.arg("dtype"))
        return call.emit(op, [x], {"axes": _axes_of(call, x), "keepdims": bool(call.arg("keepdim", False))})

    _attach(op, infer, reference, emit)
    import_torch.__name__ = import_torch.__qualname__ = f"_{name}_from_aten"
    op.imports("torch", *aten)(import_torch)
    return op


REDUCE = {name: _make_reduce(name, *row) for name, row in _REDUCE_TABLE.items()}


def _arg_op(name, ref, fn):
    op = OpDef(name, ("x",), {"axis": None, "keepdims": False}, family="reduce",
               doc=f"Index (int64) of the first {name[3:]}imum; axis None flattens first.")

    def infer(x, *, axis, keepdims):
        if axis is None:
            return x.with_shape((1,) * x.rank if keepdims else ()).with_dtype("int64")
        return x.with_shape(_reduced_shape(x.shape, (axis,), keepdims)).with_dtype("int64")

    def reference(x, *, axis, keepdims):
        return np.asarray(ref(x, axis=axis, keepdims=keepdims)).astype(np.int64)

    def emit(node, k):
        k.assign(node, f"{fn}({k.ref(node.inputs[0])}, axis={k.lit(node.attrs['axis'])}, "
                       f"keepdims={k.lit(node.attrs['keepdims'])})")

    return _attach(op, infer, reference, emit)


ARGMAX = _arg_op("argmax", np.argmax, "ops.argmax")
ARGMIN = _arg_op("argmin", np.argmin, "ops.argmin")


@ARGMAX.imports("torch", "aten::argmax")
@ARGMIN.imports("torch", "aten::argmin")
def _argmax_argmin_from_aten(call):
    op = ARGMAX if call.node.target._schema.name == "aten::argmax" else ARGMIN
    x, dim = call.arg("self"), call.arg("dim")
    axis = None if dim is None or x.type.rank == 0 else norm_axis(dim, x.type.rank)
    return call.emit(op, [x], {"axis": axis, "keepdims": bool(call.arg("keepdim", False))})


@REDUCE["amax"].imports("torch", "aten::max")
@REDUCE["amin"].imports("torch", "aten::min")
def _max_min_from_aten(call):
    """max(x) reduces all; max(x, dim) is (values, indices); max(x, other) is elementwise."""
    is_max = call.node.target._schema.name == "aten::max"
    x, overload = call.arg("self"), call.node.target._schema.overload_name
    if overload == "other":
        return call.emit(BINARY["maximum" if is_max else "minimum"], [x, call.arg("other")])
    if overload != "dim":
        return call.emit(REDUCE["amax" if is_max else "amin"], [x], {"axes": tuple(range(x.type.rank))})
    keepdims = bool(call.arg("keepdim", False))
    axis = norm_axis(call.arg("dim"), x.type.rank) if x.type.rank else None
    values = call.emit(REDUCE["amax" if is_max else "amin"], [x], {"axes": _axes_of(call, x), "keepdims": keepdims})
    indices = call.emit(ARGMAX if is_max else ARGMIN, [x], {"axis": axis, "keepdims": keepdims}) \
        if call.output_read(1) else None  # only what is read (Note [unused outputs])
    return [values, indices]


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

    def emit(node, k):
        x, a = node.inputs[0], node.attrs
        n = int(np.prod([x.type.shape[i] for i in a["axes"]]))
        var = f"ops.var({k.ref(x)}, axis={k.lit(_keras_axis(a['axes'], x.type.rank))}, keepdims={k.lit(a['keepdims'])})"
        if a["correction"]:
            # Rescale the biased variance; a zero divisor gives inf (nan for 0/0) exactly as torch does.
            divisor = max(n - a["correction"], 0)
            var = f"ops.multiply({var}, {k.lit(n / divisor if divisor else float('inf'))})"
        k.assign(node, f"ops.sqrt({var})" if root else var)

    return _attach(op, infer, reference, emit)


VAR = _moment_op("var", False)
STD = _moment_op("std", True)


def _moment_attrs(call, x):
    correction = call.arg("correction")
    if correction is None:
        correction = 1 if call.arg("unbiased", True) else 0
    return {"axes": _axes_of(call, x), "keepdims": bool(call.arg("keepdim", False)), "correction": float(correction)}


@VAR.imports("torch", "aten::var", "aten::var_mean")
@STD.imports("torch", "aten::std", "aten::std_mean")
def _var_std_from_aten(call):
    """var/std, and var_mean/std_mean as the pair (var or std, mean)."""
    name = call.node.target._schema.name
    x = call.arg("self")
    attrs = _moment_attrs(call, x)
    spread = call.emit(VAR if name.startswith("aten::var") else STD, [x], attrs)
    if not name.endswith("_mean"):
        return spread
    return [spread, call.emit(REDUCE["mean"], [x], {"axes": attrs["axes"], "keepdims": attrs["keepdims"]})]


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


@VECTOR_NORM.emits("keras-jax")
def _vector_norm_to_keras(node, k):
    # Written out rather than ops.norm, which treats two axes as a matrix norm.
    x, a = node.inputs[0], node.attrs
    where = f"axis={k.lit(_keras_axis(a['axes'], x.type.rank))}, keepdims={k.lit(a['keepdims'])}"
    ref, p = k.ref(x), a["ord"]
    if p in (float("inf"), float("-inf")):
        k.assign(node, f"ops.{'max' if p > 0 else 'min'}(ops.abs({ref}), {where})")
    elif p == 0:
        k.assign(node, f"ops.sum(ops.cast(ops.not_equal({ref}, 0), {k.lit(x.type.dtype)}), {where})")
    elif p == 1:
        k.assign(node, f"ops.sum(ops.abs({ref}), {where})")
    elif p == 2:
        k.assign(node, f"ops.sqrt(ops.sum(ops.square({ref}), {where}))")
    else:
        k.assign(node, f"ops.power(ops.sum(ops.power(ops.abs({ref}), {k.lit(p)}), {where}), {k.lit(1.0 / p)})")


@VECTOR_NORM.imports("torch", "aten::linalg_vector_norm")
def _vector_norm_from_aten(call):
    x = _cast_to(call, call.arg("self"), call.arg("dtype"))
    attrs = {"axes": _axes_of(call, x), "keepdims": bool(call.arg("keepdim", False)), "ord": float(call.arg("ord", 2))}
    return call.emit(VECTOR_NORM, [x], attrs)


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


@SOFTMAX.emits("keras-jax")
def _softmax_to_keras(node, k):
    k.layer(node, "Softmax", {"axis": node.attrs["axis"]}, [node.inputs[0]])


@LOG_SOFTMAX.emits("keras-jax")
def _log_softmax_to_keras(node, k):
    k.assign(node, f"ops.log_softmax({k.ref(node.inputs[0])}, axis={k.lit(node.attrs['axis'])})")


@SOFTMAX.imports("torch", "aten::softmax", "aten::_softmax")
@LOG_SOFTMAX.imports("torch", "aten::log_softmax", "aten::_log_softmax")
def _softmax_from_aten(call):
    """``dtype=`` and ``half_to_float`` cast the input first, so the output dtype is torch's."""
    op = LOG_SOFTMAX if "log_softmax" in call.node.target._schema.name else SOFTMAX
    x = _cast_to(call, call.arg("self"), call.out_type().dtype)
    return call.emit(op, [x], {"axis": norm_axis(call.arg("dim"), x.type.rank)})
