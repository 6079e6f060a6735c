"""Scatters with a reduction, and the import rules that turn every gather and scatter into row form.

The IR writes every scatter in one "row" form: ``indices`` (N, k) are coordinates into x's first k
axes and ``updates`` (N, *x.shape[k:]) the rows written there. ``scatter`` (set / add, declared in
``ops/shape/index.py``) covers torch's ``index_put``/``scatter``/``scatter_add``/``index_add``/``put``
and JAX's ``scatter``/``scatter-add``; ``scatter_reduce`` here covers the products, maxima and
minima (torch ``scatter_reduce``/``index_reduce``, JAX ``scatter-mul``/``-max``/``-min``), where
duplicate coordinates combine with x's own value. Means are sums divided by counts (both sums).

Gathers are ``index_select`` (numpy.take on one axis) and ``gather`` (take_along_axis), also in
``ops/shape/index.py``; the rule modules here rewrite the general forms (JAX's GatherDimensionNumbers,
torch's diagonal, as_strided, unfold, embedding_bag) into them with constant index tables, so every
form is an XLA gather or scatter with static shapes on TPU. Ops whose output shape depends on the
values (nonzero, unique, masked_select, boolean-mask indexing) are refused before lowering
(``frontends/torch/dynamic.py``, exit 4 with ``--strict-tpu``).

Example IR:
    %y: float32[4x5] = scatter_reduce(%x, %rows, %updates) {reduce="amax"}   # rows: int64[3x1], updates: [3x5]
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import kind

__all__ = ["SCATTER_REDUCE", "REDUCTIONS", "identity_of", "one_axis_rows"]

#: IR reduction -> (NumPy ufunc, torch's name, JAX primitive)
REDUCTIONS = {"prod": (np.multiply, "prod", "scatter-mul"), "amax": (np.maximum, "amax", "scatter-max"),
              "amin": (np.minimum, "amin", "scatter-min")}

SCATTER_REDUCE = OpDef("scatter_reduce", ("x", "indices", "updates"), {"reduce": REQUIRED}, family="scatter",
                       doc="x with rows combined in at coordinates (indices (N, k) into x's first k axes, updates "
                           "(N, *rest)) by prod, amax or amin; duplicates and x's own value all take part.")


@SCATTER_REDUCE.infer
def _scatter_reduce_type(x, indices, updates, *, reduce):
    k = indices.shape[-1] if indices.rank == 2 else -1
    if reduce not in REDUCTIONS:
        raise ValueError(f"scatter_reduce {reduce!r}: expected one of {sorted(REDUCTIONS)}")
    if kind(indices.dtype) != 1 or k < 1 or k > x.rank or updates.shape != (indices.shape[0],) + x.shape[k:] \
            or updates.dtype != x.dtype:
        raise ValueError(f"scatter_reduce of {updates} at {indices} does not fit {x}")
    return x


@SCATTER_REDUCE.reference
def _scatter_reduce_numpy(x, indices, updates, *, reduce):
    out = x.copy()
    REDUCTIONS[reduce][0].at(out, tuple(indices.T), updates)
    return out


def identity_of(reduce: str, dtype: str):
    """The value a reduction starts from: 0 for sums, 1 for products, the dtype's lowest for amax.

    Example: ``identity_of("amax", "float32")`` -> ``-inf``.
    """
    if reduce in ("sum", "mean"):
        return np.zeros((), dtype)
    if reduce == "prod":
        return np.ones((), dtype)
    if dtype == "bool":
        return np.array(reduce == "amin")
    info = np.iinfo(dtype) if kind(dtype) == 1 else None
    low, high = (info.min, info.max) if info is not None else (-np.inf, np.inf)
    return np.array(low if reduce == "amax" else high, dtype)


def one_axis_rows(node) -> int:
    """The row count of a ``scatter_reduce`` reaching an emitter, whose coordinates index x's first axis only: rows
    into more axes are flattened into one first (``scatter_rows_into_one_axis``, Note [decompositions] in
    passes/legalize/decompose.py). Example: ``n = one_axis_rows(node)`` in an emit rule."""
    depth = node.inputs[1].type.shape[-1]
    if depth != 1:
        raise ValueError(f"{node.where()}: a scatter_reduce into {depth} axes reached the emitter; run the "
                         "pipeline's decompose pass first")
    return node.inputs[1].type.shape[0]
