"""ATen import rules for reductions, arg-reductions, var/std, vector norms and softmax.

Torch's ``dim`` (int, list, empty list or None) becomes the IR's ``axes`` (None and [] reduce
everything). A ``dtype=`` argument becomes a cast of the input first, which is what torch does.
``max.dim`` (values and indices) is amax plus argmax, and ``max(x, other)`` is elementwise.

Example:
    aten::mean.dim(%x, [2, 3], True) -> mean(%x) {axes=(2, 3), keepdims=True}
"""
from __future__ import annotations

from ...ir import imports
from .._util import named_rule, norm_axes, norm_axis
from ..elementwise import BINARY, CAST
from ..reduce import CUMSUM, ARGMAX, ARGMIN, LOG_SOFTMAX, REDUCE, REDUCE_TABLE, SOFTMAX, STD, VAR, VECTOR_NORM

__all__ = []


def _axes_of(call, x):
    """Torch ``dim`` (int, list, empty list or None) as IR axes; None and [] reduce everything."""
    return norm_axes(call.arg("dim"), x.type.rank) if x.type.rank else ()


def _cast_to(call, x, dtype):
    """``x`` cast to ``dtype`` (torch's ``dtype=`` argument casts before reducing)."""
    return x if dtype is None or dtype == x.type.dtype else call.emit(CAST, [x], {"dtype": dtype})


def _reduce_import(op):
    def import_torch(call):
        x = _cast_to(call, call.arg("self"), call.arg("dtype"))
        return call.emit(op, [x], {"axes": _axes_of(call, x), "keepdims": bool(call.arg("keepdim", False))})
    return named_rule(import_torch, op.name, "from_aten")


for _name, (_, _, _aten, _) in REDUCE_TABLE.items():
    REDUCE[_name].imports("torch", *_aten)(_reduce_import(REDUCE[_name]))


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


@VECTOR_NORM.imports("torch", "aten::linalg_vector_norm")
def _vector_norm_from_aten(call):
    x = _cast_to(call, call.arg("self"), call.arg("dtype"))
    attrs = {"axes": _axes_of(call, x), "keepdims": bool(call.arg("keepdim", False)), "ord": float(call.arg("ord", 2))}
    return call.emit(VECTOR_NORM, [x], attrs)


@SOFTMAX.imports("torch", "aten::softmax", "aten::_softmax")
@LOG_SOFTMAX.imports("torch", "aten::log_softmax", "aten::_log_softmax")
def _softmax_from_aten(call):
    """``dtype=`` and ``half_to_float`` cast the input first, so the output dtype is torch's."""
    op = LOG_SOFTMAX if "log_softmax" in call.node.target._schema.name else SOFTMAX
    x = _cast_to(call, call.arg("self"), call.out_type().dtype)
    return call.emit(op, [x], {"axis": norm_axis(call.arg("dim"), x.type.rank)})


@CUMSUM.imports("torch", "aten::cumsum")
def _cumsum_from_aten(call):
    """``torch.cumsum(x, dim, dtype=None)``: a ``dtype=`` casts the input first, as torch does."""
    x = _cast_to(call, call.arg("self"), call.arg("dtype"))
    if not x.type.rank:
        call.unsupported("cumsum of a 0-d tensor (it is the tensor itself)")
    return call.emit(CUMSUM, [x], {"axis": norm_axis(call.arg("dim"), x.type.rank)})


@imports("torch", "aten::hash_tensor")
def _refused_hash_from_aten(call):
    """``torch.hash_tensor``: named with the reason (exit 3) instead of an unknown op."""
    call.unsupported("hash_tensor folds a tensor's raw bits with a host-side hash; there is no keras.ops form "
                     "(compute checksums outside the model)")
