"""Keras emit rule for resize: the native forms only; legalization has rewritten every other variant.

Note [resize native forms]: both op tables name rewrite rules for ``resize``
(``passes/legalize/resize.py``: repeats, gathers and constant-matrix matmuls), and every target's
pipeline legalizes before it emits. What reaches an emit rule is therefore a resize no rule
rewrites (one that keeps every axis's size) or a graph that skipped the passes. The rules write
the identity as it is and a nearest resize by integer factors as the framework's own upsampling
(here ``UpSampling1D/2D/3D``, which repeat each sample: torch's ``i // f`` table); any other
variant raises ``Unsupported``, naming the pass that expresses it.

Example generated code:
    up = layers.UpSampling2D(2, data_format='channels_first', name='up')(x)
"""
from __future__ import annotations

from ...errors import Unsupported
from ..resize import RESIZE, axis_maps, is_identity, repeat_factor, resized_axes

__all__ = []


def _upsampling_kwargs(node, factors) -> dict | None:
    """UpSampling{n}D arguments for integer nearest ``factors``, or None where no such layer fits."""
    last, rank = node.attrs.get("channels_last", False), len(factors)
    if node.inputs[0].type.rank != rank + 2 or not (rank in (2, 3) or (rank == 1 and last)):
        return None  # UpSampling1D has no data_format: (batch, steps, features) only
    if rank == 1:
        return {"size": factors[0]}
    kwargs = {"size": tuple(factors), "data_format": "channels_last" if last else "channels_first"}
    return {**kwargs, "interpolation": "nearest"} if rank == 2 else kwargs


@RESIZE.emits("keras-jax")
def _resize_to_keras(node, k):
    """The identity, or UpSampling{n}D for nearest by integer factors (Note [resize native forms])."""
    x, mode, axes = node.inputs[0], node.attrs["mode"], resized_axes(node)
    maps = axis_maps(node)
    if all(is_identity(m, n_in) for m, (n_in, _, _) in zip(maps, axes)):
        k.assign(node, k.ref(x))
        return
    factors = [repeat_factor(m, n_in) for m, (n_in, _, _) in zip(maps, axes)] if mode.startswith("nearest") else [None]
    kwargs = None if None in factors else _upsampling_kwargs(node, factors)
    if kwargs is None:
        sizes = " x ".join(f"{n_in}->{n_out}" for n_in, n_out, _ in axes)
        raise Unsupported(f"{mode} resize {sizes} has no Keras layer with torch's sampling; the legalize pass "
                          f"rewrites it (passes/legalize/resize.py)")
    k.layer(node, f"UpSampling{len(factors)}D", kwargs, [x])
