"""keras.ops.einsum and keras.ops.matmul -> permute / reshape / matmul (or linear) / sum.

Note [einsum as matmul]: a two-operand einsum without repeated or ``...`` indices sorts its
indices into batch (both operands and the output), contracted (both operands only) and free (one
operand and the output); indices found in one operand only are summed out first. Each operand is
permuted to ``(*batch, *free, *contracted)`` / ``(*batch, *contracted, *free)``, reshaped to
``(*batch, M, K)`` / ``(*batch, K, N)`` and multiplied; the product is reshaped back and permuted
to the output order. With a stored kernel and no batch indices (the EinsumDense layer, in
from_keras.py) the product is a ``linear`` with a torch-layout ``(N, K)`` weight, which becomes
``nn.Linear`` downstream. ``ops.matmul`` casts both operands to the dtype Keras recorded.

Example:
    >>> keras.ops.einsum("bij,bjk->bik", a, b)   # -> matmul(%a, %b)
"""
from __future__ import annotations

import numpy as np

from ..elementwise.from_keras_ops import cast_to, keras_operands, out_dtype
from ..linear import LINEAR, MATMUL
from ..reduce import REDUCE
from ..shape.from_keras_ops import permute_to, reshape_to

__all__ = ["emit_einsum"]


def _parse(call, equation, count):
    equation = equation.replace(" ", "")
    if "->" not in equation or "." in equation:
        call.unsupported(f"einsum {equation!r}: implicit output or '...' is not supported")
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    if len(terms) != count or any(len(set(t)) != len(t) for t in terms + [out]):
        call.unsupported(f"einsum {equation!r}: needs {count} operand(s) without repeated indices")
    return terms, out


def _sum_out(call, x, term, keep):
    """Sum the axes of ``x`` whose index is not in ``keep``; returns (value, remaining term)."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    x = call.emit(REDUCE["sum"], [x], {"axes": axes, "keepdims": False})
    return x, "".join(c for c in term if c in keep)


def _sizes(x, term, letters):
    return [x.type.shape[term.index(c)] for c in letters]


def emit_einsum(call, equation, a, b=None, kernel=None):
    """``einsum(equation, a, b)``; pass a stored array as ``kernel`` instead of ``b`` for a linear."""
    if b is None and kernel is None:
        (ta,), out = _parse(call, equation, 1)
        a, ta = _sum_out(call, a, ta, out)
        return permute_to(call, a, [ta.index(c) for c in out])
    (ta, tb), out = _parse(call, equation, 2)
    a, ta = _sum_out(call, a, ta, tb + out)
    if kernel is not None:
        keep = [c for c in tb if c in ta + out]
        kernel = kernel.sum(axis=tuple(i for i, c in enumerate(tb) if c not in keep)) if len(keep) < len(tb) else kernel
        tb = "".join(keep)
    else:
        b, tb = _sum_out(call, b, tb, ta + out)
    batch = [c for c in out if c in ta and c in tb]
    contract = [c for c in ta if c in tb and c not in out]
    free_a, free_b = [c for c in ta if c not in tb], [c for c in tb if c not in ta]
    a = permute_to(call, a, [ta.index(c) for c in batch + free_a + contract])
    shape_a = _sizes(a, "".join(batch + free_a + contract), batch + free_a)
    k_size = int(np.prod(_sizes(a, "".join(batch + free_a + contract), contract)))
    if kernel is not None and not batch:
        order = [tb.index(c) for c in contract + free_b]
        weight = np.transpose(kernel, order).reshape(k_size, -1).T
        n_sizes = [kernel.shape[tb.index(c)] for c in free_b]
        y = call.emit(LINEAR, [reshape_to(call, a, shape_a + [k_size]), call.param(weight, "kernel")])
    else:
        if kernel is not None:
            b = call.param(kernel, "kernel")
        b = permute_to(call, b, [tb.index(c) for c in batch + contract + free_b])
        n_sizes = _sizes(b, "".join(batch + contract + free_b), free_b)
        m_size = int(np.prod(shape_a[len(batch):]))
        a = reshape_to(call, a, shape_a[:len(batch)] + [m_size, k_size])
        b = reshape_to(call, b, shape_a[:len(batch)] + [k_size, int(np.prod(n_sizes))])
        y = call.emit(MATMUL, [a, b])
    y = reshape_to(call, y, shape_a + n_sizes)
    letters = batch + free_a + free_b
    return permute_to(call, y, [letters.index(c) for c in out])


@MATMUL.imports("keras", "ops.Einsum")
def _einsum_from_keras(call):
    if len(call.args) > 2 or any(not hasattr(v, "type") for v in call.args):
        call.unsupported("einsum with more than two operands or constant operands")
    operands = [cast_to(call, v, out_dtype(call)) for v in call.args]
    return emit_einsum(call, call.layer.subscripts, *operands)


@MATMUL.imports("keras", "ops.Matmul")
def _matmul_from_keras(call):
    return call.emit(MATMUL, keras_operands(call, call.operands(2), out_dtype(call)))
