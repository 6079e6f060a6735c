"""Torch import rules for the norms with statistics outputs: native_layer_norm, native_group_norm and batch
norm with batch statistics (``_native_batch_norm_legit``, ``_native_batch_norm_legit_functional``,
``_batch_norm_with_update_functional``: torch's training mode).

The normalized output is the family's op. The saved statistics are the mean and the reciprocal standard
deviation ``rsqrt(biased var + eps)`` (torch's ``rstd`` / ``save_invstd``) as mean, var and rsqrt nodes, and
the updated running statistics are ``(1 - momentum) * running + momentum * batch``, with the unbiased batch
variance, as torch computes them. A statistics output is built only when a user reads it (Note [unused
outputs] in frontends/torch/__init__.py); in eval mode torch gives empty saved statistics, which stay unsupported.

Example:
    aten::native_layer_norm(x, [6], w, b, 1e-05) -> layer_norm(%x, %w, %b), mean(%x) {axes=(2,), keepdims=True},
        rsqrt(add(var(%x) {correction=0.0}, 1e-05))
"""
from __future__ import annotations

import numpy as np

from ..elementwise import BINARY, CAST, scalar_const
from ..elementwise.unary import UNARY
from ..norm import BATCH_NORM, GROUP_NORM, LAYER_NORM
from ..reduce import REDUCE, VAR
from ..shape.from_keras_ops import reshape_to

__all__ = []


def _scaled(call, op, x, number):
    return call.emit(BINARY[op], [x, scalar_const(call, number, x)])


def _typed(call, value, index):
    """``value`` cast to the dtype torch recorded for output ``index``."""
    dtype = call.out_type(index).dtype
    return value if value.type.dtype == dtype else call.emit(CAST, [value], {"dtype": dtype})


def _mean_var(call, x, axes, keepdims, correction=0.0):
    attrs = {"axes": tuple(axes), "keepdims": keepdims}
    return call.emit(REDUCE["mean"], [x], attrs), call.emit(VAR, [x], {**attrs, "correction": correction})


def _rstd(call, var, eps):
    return call.emit(UNARY["rsqrt"], [_scaled(call, "add", var, eps)])


def _stats(call, x, axes, keepdims, eps, first=1):
    """[mean, rstd] over ``axes`` for outputs ``first`` and ``first + 1``; [None, None] when neither is read."""
    if not (call.output_read(first) or call.output_read(first + 1)):
        return [None, None]
    mean, var = _mean_var(call, x, axes, keepdims)
    return [_typed(call, mean, first), _typed(call, _rstd(call, var, eps), first + 1)]


@LAYER_NORM.imports("torch", "aten::native_layer_norm")
def _native_layer_norm_from_aten(call):
    """(out, mean, rstd); the statistics keep the normalized axes as size 1."""
    x, shape, eps = call.arg("input"), tuple(int(d) for d in call.arg("normalized_shape")), float(call.arg("eps"))
    y = call.emit(LAYER_NORM, [x, call.arg("weight"), call.arg("bias")], {"normalized_shape": shape, "eps": eps})
    return [y, *_stats(call, x, range(x.type.rank - len(shape), x.type.rank), True, eps)]


@GROUP_NORM.imports("torch", "aten::native_group_norm")
def _native_group_norm_from_aten(call):
    """(out, mean, rstd); the statistics are (N, groups)."""
    x, groups, eps = call.arg("input"), int(call.arg("group")), float(call.arg("eps"))
    y = call.emit(GROUP_NORM, [x, call.arg("weight"), call.arg("bias")], {"groups": groups, "eps": eps})
    if not (call.output_read(1) or call.output_read(2)):
        return [y, None, None]
    n = x.type.shape[0]
    grouped = reshape_to(call, x, (n, groups, int(np.prod(x.type.shape, dtype=np.int64)) // (n * groups)))
    return [y, *_stats(call, grouped, (2,), False, eps)]


def _updated(call, running, batch, momentum):
    """``(1 - momentum) * running + momentum * batch``."""
    kept = _scaled(call, "mul", running, 1.0 - momentum)
    return call.emit(BINARY["add"], [kept, _scaled(call, "mul", batch, momentum)])


def _batch_norm(call, running_at, stats=True):
    """Outputs of a batch norm whose running statistics (if updated) are outputs ``running_at`` and + 1; with
    ``stats`` False only output 0 (the others None)."""
    x, weight, bias = call.arg("input"), call.arg("weight"), call.arg("bias")
    mean, var = call.arg("running_mean"), call.arg("running_var")
    eps, momentum = float(call.arg("eps")), float(call.arg("momentum", 0.1))
    attrs = {"eps": eps, "momentum": momentum}
    outs = [None] * (running_at + 2 if running_at else 3)
    if not call.arg("training", True):
        if mean is None or var is None:
            call.unsupported("batch norm in eval mode without running statistics")
        outs[0] = call.emit(BATCH_NORM, [x, weight, bias, mean, var], attrs)
        if running_at:
            outs[running_at:] = [mean, var]
        return outs
    axes = (0,) + tuple(range(2, x.type.rank))
    batch_mean, batch_var = _mean_var(call, x, axes, False)
    outs[0] = call.emit(BATCH_NORM, [x, weight, bias, batch_mean, batch_var], attrs)
    if not stats:
        return outs
    outs[1] = _typed(call, batch_mean, 1) if call.output_read(1) else None
    outs[2] = _typed(call, _rstd(call, batch_var, eps), 2) if call.output_read(2) else None
    if running_at and (call.output_read(running_at) or call.output_read(running_at + 1)):
        unbiased = call.emit(VAR, [x], {"axes": axes, "keepdims": False, "correction": 1.0})
        outs[running_at:] = [_typed(call, _updated(call, mean, batch_mean, momentum), running_at),
                             _typed(call, _updated(call, var, unbiased, momentum), running_at + 1)]
    return outs


@BATCH_NORM.imports("torch", "aten::_native_batch_norm_legit")
def _batch_norm_batch_stats_from_aten(call):
    """(out, save_mean, save_invstd) with batch statistics; the in-place running-statistics update is not an
    output of this op (torch.export's functional form, below, returns it)."""
    return _batch_norm(call, None)


@BATCH_NORM.imports("torch", "aten::_native_batch_norm_legit_functional")
def _batch_norm_functional_from_aten(call):
    """(out, save_mean, save_invstd, running_mean_out, running_var_out)."""
    return _batch_norm(call, 3)


@BATCH_NORM.imports("torch", "aten::_batch_norm_with_update_functional")
def _batch_norm_with_update_from_aten(call):
    """(out, save_mean, save_invstd, reserve, running_mean_out, running_var_out); ``reserve`` is torch's empty
    uint8 workspace (cuDNN's), a constant."""
    outs = _batch_norm(call, 4)
    outs[3] = call.const(np.zeros((0,), np.uint8), "reserve") if call.output_read(3) else None
    return outs


@BATCH_NORM.imports("torch", "aten::batch_norm")
def _batch_norm_composite_from_aten(call):
    """The one-output composite torch.export's training IR keeps (torch's ``F.batch_norm``): stored statistics in
    eval mode, batch statistics in training mode (whose running-statistics update is a side effect on the module,
    not an output). Importing it spares the whole program a re-trace (Note [in-place ops] in torch_training.py)."""
    return _batch_norm(call, None, stats=False)[0]
