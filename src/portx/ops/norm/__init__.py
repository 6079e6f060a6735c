"""Normalization (NC... layout): batch_norm with running statistics, layer_norm, group_norm, rms_norm.

Instance norm has no op of its own: with batch statistics it is group_norm with one group per
channel, and with running statistics it is batch_norm. Batch norm without running statistics
(track_running_stats=False) is batch_norm fed by mean and var nodes. Each op maps to the Keras
layer with the same arithmetic (``x * rsqrt(var + eps) * gamma + beta``, biased variance);
weights or statistics that are computed rather than stored fall back to ``keras.ops``.

Example IR:
    %y: float32[1x8x4x4] = batch_norm(%x, %bn.weight, %bn.bias, %bn.running_mean, %bn.running_var)
        {eps=1e-05}  # bn
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import honors_channels_last
from ..reduce import REDUCE, VAR

__all__ = ["BATCH_NORM", "LAYER_NORM", "GROUP_NORM", "RMS_NORM"]


def _channel_shape(rank):
    """Shape that broadcasts a per-channel vector over an NC... tensor of ``rank`` dims."""
    return (1, -1) + (1,) * (rank - 2)


def _affine(y, weight, bias, shape):
    """``y * weight + bias`` with either factor absent; vectors reshaped to ``shape``."""
    if weight is not None:
        y = y * weight.astype(np.float64).reshape(shape)
    if bias is not None:
        y = y + bias.astype(np.float64).reshape(shape)
    return y


def _normalize_numpy(x, axes, eps):
    """(x - mean) / sqrt(biased var + eps) over ``axes``, in float64."""
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x64 - mean) / np.sqrt(var + eps)


def _check_vectors(op, shape, *vectors):
    for v in vectors:
        if v is not None and tuple(v.shape) != tuple(shape):
            raise ValueError(f"{op}: parameter of shape {v.shape} does not match {tuple(shape)}")


def _all_params(k, values):
    return all(k.is_param(v) for v in values if v is not None)


# -- batch_norm --------------------------------------------------------------------------------
BATCH_NORM = OpDef("batch_norm", ("x", "weight?", "bias?", "mean", "var"), {"eps": 1e-5, "channels_last": False},
                   family="norm", doc="Inference batch norm over axis 1 (the last axis with channels_last) "
                                      "with stored statistics (torch eval mode).")


@BATCH_NORM.infer
@honors_channels_last
def _batch_norm_type(x, weight, bias, mean, var, *, eps):
    if x.rank < 2:
        raise ValueError(f"batch_norm needs an (N, C, ...) input, got {x.shape}")
    _check_vectors("batch_norm", (x.shape[1],), weight, bias, mean, var)
    return x


@BATCH_NORM.reference
@honors_channels_last
def _batch_norm_numpy(x, weight, bias, mean, var, *, eps):
    shape = _channel_shape(x.ndim)
    y = (x.astype(np.float64) - mean.reshape(shape)) / np.sqrt(var.astype(np.float64).reshape(shape) + eps)
    return _affine(y, weight, bias, shape).astype(x.dtype)


@BATCH_NORM.emits("keras-jax")
def _batch_norm_to_keras(node, k):
    x, w, b, mean, var = node.inputs
    eps = float(node.attrs["eps"])
    axis = -1 if node.attrs.get("channels_last", False) else 1
    if _all_params(k, node.inputs[1:]):
        weights = [k.param(v) for v in (w, b, mean, var) if v is not None]
        k.layer(node, "BatchNormalization", {"axis": axis, "epsilon": eps, "center": b is not None,
                                             "scale": w is not None}, [x], weights)
        return
    scale, offset = (k.ref(v) if v is not None else "None" for v in (w, b))
    if w is None and b is not None:  # symbolic ops.batch_normalization fails on an offset without a scale
        scale = f"ops.ones_like({k.ref(mean)})"
    k.assign(node, f"ops.batch_normalization({k.ref(x)}, {k.ref(mean)}, {k.ref(var)}, axis={axis}, "
                   f"offset={offset}, scale={scale}, epsilon={k.lit(eps)})")


@BATCH_NORM.imports("torch", "aten::_native_batch_norm_legit_no_training")
def _batch_norm_from_aten(call):
    """Only output 0 exists in inference; the saved statistics are never read (Note [unused outputs])."""
    y = call.emit(BATCH_NORM, [call.arg("input"), call.arg("weight"), call.arg("bias"),
                               call.arg("running_mean"), call.arg("running_var")], {"eps": float(call.arg("eps"))})
    return [y, None, None]


@BATCH_NORM.imports("torch", "aten::_native_batch_norm_legit")
def _batch_norm_batch_stats_from_aten(call):
    """Batch statistics (track_running_stats=False): batch_norm fed by the batch mean and biased var.

    Torch only reaches this op when it normalizes with batch statistics; with stored ones in eval
    mode it calls ``_native_batch_norm_legit_no_training`` instead.
    """
    x = call.arg("input")
    axes = {"axes": (0,) + tuple(range(2, x.type.rank)), "keepdims": False}
    stats = [call.emit(REDUCE["mean"], [x], axes), call.emit(VAR, [x], {**axes, "correction": 0.0})]
    y = call.emit(BATCH_NORM, [x, call.arg("weight"), call.arg("bias"), *stats], {"eps": float(call.arg("eps"))})
    return [y, None, None]


# -- layer_norm and rms_norm ---------------------------------------------------------------------
def _trailing_axes(x, normalized_shape):
    n = len(normalized_shape)
    if tuple(x.shape[x.rank - n:]) != tuple(normalized_shape) or n > x.rank:
        raise ValueError(f"normalized_shape {tuple(normalized_shape)} does not end input shape {x.shape}")
    return tuple(range(x.rank - n, x.rank))


def _keras_axis(axes, rank):
    """``-1`` for the usual last-axis case, else the list of axes Keras expects."""
    return -1 if axes == (rank - 1,) else list(axes)


LAYER_NORM = OpDef("layer_norm", ("x", "weight?", "bias?"), {"normalized_shape": REQUIRED, "eps": 1e-5},
                   family="norm", doc="Normalize over the trailing axes given by normalized_shape.")


@LAYER_NORM.infer
def _layer_norm_type(x, weight=None, bias=None, *, normalized_shape, eps):
    _trailing_axes(x, normalized_shape)
    _check_vectors("layer_norm", normalized_shape, weight, bias)
    return x


@LAYER_NORM.reference
def _layer_norm_numpy(x, weight=None, bias=None, *, normalized_shape, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    return _affine(_normalize_numpy(x, axes, eps), weight, bias, tuple(normalized_shape)).astype(x.dtype)


@LAYER_NORM.emits("keras-jax")
def _layer_norm_to_keras(node, k):
    x, w, b = (list(node.inputs) + [None, None])[:3]
    eps = float(node.attrs["eps"])
    axis = _keras_axis(tuple(range(x.type.rank - len(node.attrs["normalized_shape"]), x.type.rank)), x.type.rank)
    if _all_params(k, (w, b)):
        weights = [k.param(v) for v in (w, b) if v is not None]
        k.layer(node, "LayerNormalization", {"axis": axis, "epsilon": eps, "center": b is not None,
                                             "scale": w is not None}, [x], weights)
        return
    gamma, beta = (k.ref(v) if v is not None else "None" for v in (w, b))
    k.assign(node, f"ops.layer_normalization({k.ref(x)}, {gamma}, {beta}, axis={k.lit(axis)}, "
                   f"epsilon={k.lit(eps)})")


@LAYER_NORM.imports("torch", "aten::layer_norm")
def _layer_norm_from_aten(call):
    attrs = {"normalized_shape": tuple(int(d) for d in call.arg("normalized_shape")), "eps": float(call.arg("eps"))}
    return call.emit(LAYER_NORM, [call.arg("input"), call.arg("weight"), call.arg("bias")], attrs)


RMS_NORM = OpDef("rms_norm", ("x", "weight?"), {"normalized_shape": REQUIRED, "eps": REQUIRED}, family="norm",
                 doc="x * rsqrt(mean(x**2) + eps) * weight over the trailing normalized_shape axes.")


@RMS_NORM.infer
def _rms_norm_type(x, weight=None, *, normalized_shape, eps):
    _trailing_axes(x, normalized_shape)
    _check_vectors("rms_norm", normalized_shape, weight)
    return x


@RMS_NORM.reference
def _rms_norm_numpy(x, weight=None, *, normalized_shape, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 ** 2).mean(axis=axes, keepdims=True) + eps)
    return _affine(y, weight, None, tuple(normalized_shape)).astype(x.dtype)


@RMS_NORM.emits("keras-jax")
def _rms_norm_to_keras(node, k):
    x, w = (list(node.inputs) + [None])[:2]
    shape = tuple(node.attrs["normalized_shape"])
    eps = float(node.attrs["eps"])
    axis = _keras_axis(tuple(range(x.type.rank - len(shape), x.type.rank)), x.type.rank)
    if w is None or k.is_param(w):
        # RMSNormalization always owns a scale; torch's elementwise_affine=False is a scale of ones.
        scale = k.param(w) if w is not None else np.ones(shape, dtype=x.type.dtype)
        k.layer(node, "RMSNormalization", {"axis": axis, "epsilon": eps}, [x], [scale])
        return
    k.assign(node, f"ops.rms_normalization({k.ref(x)}, scale={k.ref(w)}, axis={k.lit(axis)}, epsilon={k.lit(eps)})")


@RMS_NORM.imports("torch", "aten::rms_norm")
def _rms_norm_from_aten(call):
    x = call.arg("input")
    # torch's default eps is the machine epsilon of the input dtype.
    eps = call.arg("eps", float(np.finfo("float32" if x.type.dtype == "bfloat16" else x.type.dtype).eps))
    attrs = {"normalized_shape": tuple(int(d) for d in call.arg("normalized_shape")), "eps": float(eps)}
    return call.emit(RMS_NORM, [x, call.arg("weight")], attrs)


# -- group_norm (and instance norm) --------------------------------------------------------------
GROUP_NORM = OpDef("group_norm", ("x", "weight?", "bias?"), {"groups": REQUIRED, "eps": 1e-5, "channels_last": False},
                   family="norm", doc="Normalize each group of C/groups channels over its channels and spatial axes.")


@GROUP_NORM.infer
@honors_channels_last
def _group_norm_type(x, weight=None, bias=None, *, groups, eps):
    if x.rank < 2 or x.shape[1] % groups:
        raise ValueError(f"group_norm: {groups} groups do not divide the channels of {x.shape}")
    _check_vectors("group_norm", (x.shape[1],), weight, bias)
    return x


@GROUP_NORM.reference
@honors_channels_last
def _group_norm_numpy(x, weight=None, bias=None, *, groups, eps):
    n, c = x.shape[:2]
    grouped = x.reshape((n, groups, -1))
    y = _normalize_numpy(grouped, (2,), eps).reshape(x.shape)
    return _affine(y, weight, bias, _channel_shape(x.ndim)).astype(x.dtype)


@GROUP_NORM.emits("keras-jax")
def _group_norm_to_keras(node, k):
    x, w, b = (list(node.inputs) + [None, None])[:3]
    last = node.attrs.get("channels_last", False)
    kwargs = {"groups": int(node.attrs["groups"]), "axis": -1 if last else 1, "epsilon": float(node.attrs["eps"])}
    if _all_params(k, (w, b)):
        weights = [k.param(v) for v in (w, b) if v is not None]
        k.layer(node, "GroupNormalization", {**kwargs, "center": b is not None, "scale": w is not None}, [x], weights)
        return
    expr = k.sublayer(node, "GroupNormalization", {**kwargs, "center": False, "scale": False}, [x])
    shape = k.lit(_channel_shape(x.type.rank))
    for v, fn in ((w, "multiply"), (b, "add")):  # a per-channel vector broadcasts as it is when C is last
        if v is not None:
            expr = f"ops.{fn}({expr}, {k.ref(v) if last else f'ops.reshape({k.ref(v)}, {shape})'})"
    k.assign(node, expr)


@GROUP_NORM.imports("torch", "aten::group_norm")
def _group_norm_from_aten(call):
    attrs = {"groups": int(call.arg("num_groups")), "eps": float(call.arg("eps"))}
    return call.emit(GROUP_NORM, [call.arg("input"), call.arg("weight"), call.arg("bias")], attrs)


@GROUP_NORM.imports("torch", "aten::instance_norm")
def _instance_norm_from_aten(call):
    """Batch statistics: one group per channel. Running statistics (eval, tracked): batch_norm."""
    x, w, b, eps = call.arg("input"), call.arg("weight"), call.arg("bias"), float(call.arg("eps"))
    if call.arg("use_input_stats", True):
        return call.emit(GROUP_NORM, [x, w, b], {"groups": int(x.type.shape[1]), "eps": eps})
    mean, var = call.arg("running_mean"), call.arg("running_var")
    if mean is None or var is None:
        call.unsupported("instance_norm without input statistics needs running_mean and running_var")
    return call.emit(BATCH_NORM, [x, w, b, mean, var], {"eps": eps})
