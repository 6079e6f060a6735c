"""Torch import rules for normalization: batch, layer, rms, group and instance norm.

Torch's eval-mode batch norm is ``_native_batch_norm_legit_no_training`` (stored statistics);
batch statistics (``_native_batch_norm_legit`` and its functional forms) are in from_torch_stats.py.
Instance norm is group_norm with one group per channel (batch statistics) or batch_norm (running
statistics). The eval-mode batch norm has three outputs of which inference reads only the first
(Note [unused outputs] in frontends/torch/__init__.py).

Example:
    aten::layer_norm(x, [768], w, b, 1e-05) -> layer_norm(%x, %w, %b) {normalized_shape=(768,), eps=1e-05}
"""
from __future__ import annotations

import numpy as np

from ..norm import BATCH_NORM, GROUP_NORM, LAYER_NORM, RMS_NORM

__all__ = []


@BATCH_NORM.imports("torch", "aten::_native_batch_norm_legit_no_training")
def _batch_norm_from_aten(call):
    """Only output 0 exists in inference; the saved statistics are never read (Note [unused outputs])."""
    y = call.emit(BATCH_NORM, [call.arg("input"), call.arg("weight"), call.arg("bias"),
                               call.arg("running_mean"), call.arg("running_var")],
                  {"eps": float(call.arg("eps")), "momentum": float(call.arg("momentum", 0.1))})
    return [y, None, None]


@LAYER_NORM.imports("torch", "aten::layer_norm")
def _layer_norm_from_aten(call):
    attrs = {"normalized_shape": tuple(int(d) for d in call.arg("normalized_shape")), "eps": float(call.arg("eps"))}
    return call.emit(LAYER_NORM, [call.arg("input"), call.arg("weight"), call.arg("bias")], attrs)


@RMS_NORM.imports("torch", "aten::rms_norm")
def _rms_norm_from_aten(call):
    x = call.arg("input")
    # torch's default eps is the machine epsilon of the input dtype.
    eps = call.arg("eps", float(np.finfo("float32" if x.type.dtype == "bfloat16" else x.type.dtype).eps))
    attrs = {"normalized_shape": tuple(int(d) for d in call.arg("normalized_shape")), "eps": float(eps)}
    return call.emit(RMS_NORM, [x, call.arg("weight")], attrs)


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
