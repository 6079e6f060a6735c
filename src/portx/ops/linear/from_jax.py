"""JAX import rule for dot_general.

With no batch axes and a weight on the right it is ``linear`` (the weight stored as (out, in));
otherwise both sides are permuted to (batch..., M, K) @ (batch..., K, N) and the result reshaped
to JAX's (batch..., lhs free..., rhs free...). Operands of another dtype than the result (int8 ones of
Keras' quantized layers, with ``preferred_element_type=float32``) are cast to it: stored kernels once.

Example:
    dot_general[(([1], [0]), ([], []))](%x, %dense.kernel) -> linear(%x, %dense.weight) {}
"""
from __future__ import annotations

import math

from .._jax import arranged, permuted, reshaped
from ..elementwise import CAST
from ..linear import LINEAR, MATMUL

__all__ = []


@MATMUL.imports("jax", "dot_general")
def _dot_general_from_jax(call):
    (lc, rc), (lb, rb) = call.params["dimension_numbers"]
    a, b = call.in_type(0), call.in_type(1)
    lc, rc, lb, rb = (tuple(int(i) for i in t) for t in (lc, rc, lb, rb))
    lfree = [i for i in range(a.rank) if i not in lc and i not in lb]
    rfree = [i for i in range(b.rank) if i not in rc and i not in rb]
    k = math.prod(a.shape[i] for i in lc)
    lshape, rshape = [a.shape[i] for i in lfree], [b.shape[i] for i in rfree]
    n = math.prod(rshape)
    # preferred_element_type: int8 operands (quantized layers) are cast to it; an integer product of int8/int16
    # operands runs in float32 (exact for them) and is cast back
    dtype = call.out_type().dtype
    if not dtype.startswith(("float", "bfloat")) and {a.dtype, b.dtype} <= {"int8", "uint8", "int16"}:
        dtype = "float32"
    to_out = (lambda array: array.astype(dtype)) if b.dtype != dtype and call.const_value(1) is not None else None
    if not lb and call.const_value(1) is not None:
        x = reshaped(call, permuted(call, _cast(call, call.input(0), dtype), lfree + list(lc)), (*lshape, k))
        w = arranged(call, 1, perm=rfree + list(rc), shape=(n, k), fn=to_out)
        y = call.emit(LINEAR, [x, w])
    else:
        batch = [a.shape[i] for i in lb]
        x = reshaped(call, permuted(call, _cast(call, call.input(0), dtype), list(lb) + lfree + list(lc)),
                     (*batch, math.prod(lshape), k))
        w = _cast(call, arranged(call, 1, perm=list(rb) + list(rc) + rfree, shape=(*batch, k, n), fn=to_out), dtype)
        y = call.emit(MATMUL, [x, w])
    return _cast(call, reshaped(call, y, call.out_type().shape), call.out_type().dtype)


def _cast(call, x, dtype):
    """``x`` as ``dtype`` (a cast node only where it differs)."""
    return x if x.type.dtype == dtype else call.emit(CAST, [x], {"dtype": dtype})
