"""Keras-JAX emit rules for reductions, arg-reductions, var/std, vector norms and softmax.

Each reduction is the ``keras.ops`` function of its table row with ``axis=None`` when every axis
is reduced (it reads better), except that a mean or max of a float32 graph value over exactly the
spatial axes of a rank-3 to rank-5 tensor is the named ``GlobalAveragePooling``/``GlobalMaxPooling``
layer (the fold pass turns pool-then-reshape into such a reduction). Keras' ``ops.var`` is the
biased variance, so a correction rescales it; vector norms are written out rather than
``ops.norm``, which treats two axes as a matrix norm. Softmax is the ``Softmax`` layer (``ops.softmax``
off float32), log_softmax ``ops.log_softmax``.

Example generated code:
    pool = layers.GlobalAveragePooling2D(name='pool')(relu)
    total = ops.sum(relu, axis=(1, 2), keepdims=False)
    softmax = layers.Softmax(name='softmax')(head)
"""
from __future__ import annotations

import numpy as np

from ...ir import SymDim
from .._util import forward, named_rule
from ..reduce import CUMSUM, ARGMAX, ARGMIN, LOG_SOFTMAX, REDUCE, REDUCE_TABLE, SOFTMAX, STD, VAR, VECTOR_NORM
from ..shape import EXPAND

__all__ = []


def _keras_axis(axes, rank):
    """``None`` when every axis is reduced (reads better), else the tuple."""
    return None if len(axes) == rank else tuple(axes)


_GLOBAL_POOLS = {"mean": "GlobalAveragePooling", "amax": "GlobalMaxPooling"}


def _global_pool(node, k):
    """(layer class, arguments) of the Keras global pooling that computes this mean or max, or None."""
    x, axes = node.inputs[0], tuple(node.attrs["axes"])
    rank = x.type.rank
    if node.op.name not in _GLOBAL_POOLS or not 3 <= rank <= 5 or not k.layer_ready(node):
        return None
    for fmt, spatial in (("channels_last", range(1, rank - 1)), ("channels_first", range(2, rank))):
        if axes == tuple(spatial):
            cls = f"{_GLOBAL_POOLS[node.op.name]}{rank - 2}D"
            return cls, {"keepdims": node.attrs["keepdims"], "data_format": fmt}
    return None


def _reduce_emit(name, fn):
    def emit(node, k):
        pool = _global_pool(node, k)
        if pool is not None:
            k.layer(node, pool[0], pool[1], [node.inputs[0]])
            return
        x = node.inputs[0]
        axis = _keras_axis(node.attrs["axes"], x.type.rank)
        k.assign(node, f"{fn}({k.ref(x)}, axis={k.lit(axis)}, keepdims={k.lit(node.attrs['keepdims'])})")
    return named_rule(emit, name, "to_keras")


for _name, (_, _fn, _, _) in REDUCE_TABLE.items():
    REDUCE[_name].emits("keras-jax")(_reduce_emit(_name, _fn))


def _arg_emit(name, fn):
    def emit(node, k):
        k.assign(node, f"{fn}({k.ref(node.inputs[0])}, axis={k.lit(node.attrs['axis'])}, "
                       f"keepdims={k.lit(node.attrs['keepdims'])})")
    return named_rule(emit, name, "to_keras")


ARGMAX.emits("keras-jax")(_arg_emit("argmax", "ops.argmax"))
ARGMIN.emits("keras-jax")(_arg_emit("argmin", "ops.argmin"))


def _moment_emit(name, root):
    def emit(node, k):
        x, a = node.inputs[0], node.attrs
        n = int(np.prod([x.type.shape[i] for i in a["axes"]]))
        var = f"ops.var({k.ref(x)}, axis={k.lit(_keras_axis(a['axes'], x.type.rank))}, keepdims={k.lit(a['keepdims'])})"
        if a["correction"]:
            # Rescale the biased variance; a zero divisor gives inf (nan for 0/0) exactly as torch does.
            divisor = max(n - a["correction"], 0)
            var = f"ops.multiply({var}, {k.lit(n / divisor if divisor else float('inf'))})"
        k.assign(node, f"ops.sqrt({var})" if root else var)
    return named_rule(emit, name, "to_keras")


VAR.emits("keras-jax")(_moment_emit("var", False))
STD.emits("keras-jax")(_moment_emit("std", True))


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


@SOFTMAX.emits("keras-jax")
def _softmax_to_keras(node, k):
    x = node.inputs[0]
    axis = -1 if node.attrs["axis"] in (-1, x.type.rank - 1) else node.attrs["axis"]
    if k.layer_ready(node):
        k.layer(node, "Softmax", {"axis": axis}, [x])
    else:
        k.assign(node, f"ops.softmax({k.ref(x)}, axis={k.lit(axis)})")


@LOG_SOFTMAX.emits("keras-jax")
def _log_softmax_to_keras(node, k):
    k.assign(node, f"ops.log_softmax({k.ref(node.inputs[0])}, axis={k.lit(node.attrs['axis'])})")


@CUMSUM.emits("keras-jax")
def _cumsum_to_keras(node, k):
    """``ops.cumsum`` (a reversed sum is flipped around it by ``passes/legalize/decompose.py``); along a free axis,
    a ``RunningSum`` layer (Note [running sums over a free axis])."""
    x, axis, dtype = k.ref(node.inputs[0]), forward(node), node.output.type.dtype
    if not isinstance(k.graph.free_shape(node.inputs[0])[axis], SymDim):
        cast = "" if dtype == node.inputs[0].type.dtype else f", dtype={k.lit(dtype)}"
        k.assign(node, f"ops.cumsum({x}, axis={axis}{cast})")
        return
    if dtype != node.inputs[0].type.dtype:
        x = f"ops.cast({x}, {k.lit(dtype)})"
    k.define("RunningSum", RUNNING_SUM_LAYER)
    k.assign(node, f"RunningSum({axis}, counting={_counts_ones(node, k)})({x})")


def _counts_ones(node, k) -> bool:
    """True where the running sum is of ones (an ``expand`` of a stored array of ones): the counts
    ``passes/free_dims.py`` writes for an arange whose length is free."""
    source = next((n for n in k.graph.nodes if node.inputs[0] in n.outputs), None)
    if source is None or source.op is not EXPAND or not k.is_param(source.inputs[0]):
        return False
    return bool(np.all(k.param(source.inputs[0]) == 1))


# Note [running sums over a free axis]: JAX lowers every cumulative sum to a reduce_window as wide as the axis
# (jax/_src/lax/control_flow/loops.py, cumred_reduce_window_impl); with the axis' size symbolic (jax.export with
# free dims, the TPU proof) that window is the custom call ``stablehlo.dynamic_reduce_window``, which the proof
# cannot show a TPU has. Every HF decoder with a free sequence has one: its positions are an arange of the
# sequence length, which portx writes as a running count of ones (passes/free_dims.py). Along a free axis the
# emitted model calls ``RunningSum``: a count of ones is an iota (exact, O(n)); any other running sum is a
# product with an upper-triangular mask of ones (O(n^2) in time and n x n in memory, at matmul precision
# "highest" so float32 sums are not cut to bfloat16 on a TPU). Along a static axis ``ops.cumsum`` stays.
RUNNING_SUM_LAYER = '''
@keras.saving.register_keras_serializable(package="converted")
class RunningSum(layers.Layer):
    """ops.cumsum along an axis whose size is free, without the reduce_window JAX lowers a cumsum to: an iota
    where the input is known to be ones (``counting``), else a product with a triangular mask of ones."""

    def __init__(self, axis, counting=False, **options):
        options.pop("autocast", None)
        super().__init__(autocast=False, **options)
        self.axis, self.counting = axis, counting

    def call(self, x):
        from jax import lax
        import jax.numpy as jnp
        if self.counting:
            return lax.broadcasted_iota(x.dtype, x.shape, self.axis) + jnp.ones((), x.dtype)
        n = x.shape[self.axis]
        upper = lax.broadcasted_iota("int32", (n, n), 0) <= lax.broadcasted_iota("int32", (n, n), 1)
        moved = jnp.moveaxis(x, self.axis, -1)
        total = jnp.matmul(moved, upper.astype(x.dtype), precision=lax.Precision.HIGHEST)
        return jnp.moveaxis(total, -1, self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "counting": self.counting}
'''
