"""ONNX import rule for Resize.

Note [onnx resize]: the forms torch also has map to the IR ``resize`` op: nearest with ``asymmetric`` +
``floor`` (torch nearest) or ``half_pixel`` + ``round_prefer_ceil`` (nearest-exact); linear and cubic
(a = -0.75, exclude_outside 0) with ``half_pixel`` / ``pytorch_half_pixel`` (align_corners=False) or
``align_corners``. Every other form (other coordinate modes and rounding, antialias, cubic_coeff_a,
tf_crop_and_resize with a constant roi) is still separable: each resized axis is a constant map, built by
running ONNX's own reference Resize on an identity (constant folding, Note [resize as matrices]): a
gather for nearest, a matmul otherwise.

Example:
    Resize(%x, scales=[1, 1, 2, 2]) {mode="nearest"} -> resize(%x) {size=(16, 16), mode="nearest", scales=(2.0, 2.0)}
"""
from __future__ import annotations

import numpy as np

from ..linear import MATMUL
from ..resize import RESIZE
from ..shape import PERMUTE
from ..shape.index import INDEX_SELECT

__all__ = []

#: coordinate mode -> align_corners, for the linear and cubic forms torch has
_LINEAR = {"half_pixel": False, "pytorch_half_pixel": False, "align_corners": True}
#: (coordinate mode, nearest_mode) -> the IR's nearest mode
_NEAREST = {("asymmetric", "floor"): "nearest", ("half_pixel", "round_prefer_ceil"): "nearest_exact"}
#: the attributes that say how ONNX resizes one axis (passed on when it builds the axis map)
_AXIS_ATTRS = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
               "antialias", "extrapolation_value")


def _ir_form(call, sizes_in, size, scales):
    """IR resize attributes for the torch-like forms, else None (Note [onnx resize])."""
    mode, ctm = call.attr("mode", "nearest"), call.attr("coordinate_transformation_mode", "half_pixel")
    if call.attr("antialias", 0) or call.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        return None
    if ctm == "pytorch_half_pixel" and min(size) == 1:
        return None
    if mode == "nearest":
        nearest = (ctm, call.attr("nearest_mode", "round_prefer_floor"))
        ir_mode = _NEAREST.get(nearest)
        return None if ir_mode is None else {"size": size, "mode": ir_mode, "scales": scales}
    if ctm == "align_corners" and scales is not None and any(n * f != m for n, f, m in zip(sizes_in, scales, size)):
        return None  # ONNX spans (in - 1) / (in * scale - 1), not the rounded output (Note [onnx resize])
    odd_cubic = mode == "cubic" and (call.attr("cubic_coeff_a", -0.75) != -0.75 or call.attr("exclude_outside", 0))
    if ctm not in _LINEAR or odd_cubic:
        return None
    return {"size": size, "mode": mode, "align_corners": _LINEAR[ctm], "scales": None if _LINEAR[ctm] else scales}


def _axis_map(call, n_in, n_out, axis, scale, roi):
    """The ONNX Resize of one axis, as (n_out, n_in) weights or (n_out,) source indices for nearest."""
    attrs = {a: call.attr(a) for a in _AXIS_ATTRS if call.attr(a) is not None}
    eye = np.eye(n_in, dtype=np.float64)
    box = None if roi is None else np.array([0, roi[axis], 1, roi[axis + len(roi) // 2]], dtype=np.float32)
    if scale is not None:
        result = call.fold("Resize", [eye, box, np.array([1, scale], np.float32)], **attrs)[0]
    else:
        result = call.fold("Resize", [eye, box, None, np.array([n_in, n_out], np.int64)], **attrs)[0]
    weights = np.asarray(result).T  # (n_out, n_in)
    if call.attr("mode", "nearest") == "nearest":
        return np.argmax(weights, axis=1).astype(np.int64)
    return weights


def _apply_axis(call, x, axis, table):
    if table.ndim == 1:
        return call.emit(INDEX_SELECT, [x, call.const(table, "index")], {"axis": axis})
    rank = x.type.rank
    last = rank - 1
    if axis != last:
        perm = tuple(i for i in range(rank) if i != axis) + (axis,)
        x = call.emit(PERMUTE, [x], {"perm": perm})
    y = call.emit(MATMUL, [x, call.const(table.T.astype(x.type.dtype), "weights")])
    if axis != last:
        back = tuple(int(i) for i in np.argsort(perm))
        y = call.emit(PERMUTE, [y], {"perm": back})
    return y


def _full_roi(call, rank, axes):
    """The constant roi as starts then ends over every axis (None when absent)."""
    roi = call.constant(1) if call.has_input(1) else None
    if roi is None or np.asarray(roi).size == 0:
        return None
    roi = [float(r) for r in np.asarray(roi)]
    if axes is None:
        return roi
    full = [0.0] * rank + [1.0] * rank
    for i, a in enumerate(axes):
        full[a % rank], full[a % rank + rank] = roi[i], roi[i + len(axes)]
    return full


def _output_size(call, sizes_in, scales, axes):
    """The output shape: shape inference's, else the ``sizes`` input (computed by a folded ``Shape`` chain, as the
    classic exporter writes ``F.interpolate(size=...)``; Note [onnx shape arithmetic]), else ``floor(n * scale)``."""
    out = call.out_type(0)
    if out is not None:
        return tuple(out.shape)
    sizes = call.constant(3) if call.has_input(3) else None
    if sizes is not None and np.asarray(sizes).size:
        if call.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
            call.unsupported("keep_aspect_ratio_policy with sizes computed from data")
        full = list(sizes_in)
        for a, n in zip(axes if axes is not None else range(len(sizes_in)), np.asarray(sizes).reshape(-1)):
            full[a % len(sizes_in)] = int(n)
        return tuple(full)
    if scales is not None:
        return tuple(int(np.floor(n * np.float32(s))) for n, s in zip(sizes_in, scales))
    return call.unsupported("neither scales nor sizes is a constant (they are computed from data)")


@RESIZE.imports("onnx", "Resize")
def _resize_from_onnx(call):
    x = call.input(0)
    sizes_in, axes = tuple(x.type.shape), call.attr("axes")
    given = call.constant(2) if call.has_input(2) else None
    scales = None if given is None or np.asarray(given).size == 0 else [float(s) for s in np.asarray(given)]
    if axes is not None and scales is not None:
        full = [1.0] * x.type.rank
        for a, s in zip(axes, scales):
            full[a % x.type.rank] = s
        scales = full
    size_out = _output_size(call, sizes_in, scales, axes)
    changed = [i for i, (a, b) in enumerate(zip(sizes_in, size_out)) if a != b or (scales and scales[i] != 1)]
    if not changed:
        return x
    first = min(changed)
    if first >= 2 and x.type.rank - first <= 2:
        form = _ir_form(call, sizes_in[first:], size_out[first:], None if scales is None else tuple(scales[first:]))
        if form is not None:
            return call.emit(RESIZE, [x], form)
    roi = _full_roi(call, x.type.rank, axes)
    if call.attr("coordinate_transformation_mode") == "tf_crop_and_resize" and call.attr("extrapolation_value", 0.0):
        call.unsupported("tf_crop_and_resize with a non-zero extrapolation_value (not a linear map of the input)")
    for axis in changed:
        scale = None if scales is None else scales[axis]
        x = _apply_axis(call, x, axis, _axis_map(call, sizes_in[axis], size_out[axis], axis, scale, roi))
    return x
