"""ONNX import rules for MatMul, Gemm and Einsum.

``Gemm`` with a constant B, no transA and alpha 1 is ``linear`` (its weight B or B^T stored under B's name,
a constant 1-D C its bias); other forms are matmul and elementwise ops. ``Einsum`` with one or two operands
and no repeated index within an operand becomes permutes, sums, reshapes and one batched matmul.

Example:
    Gemm(%x, %W, %b) {transB=1} -> linear(%x, %W, %b)
    Einsum(%a, %b) {equation="bhqd,bhkd->bhqk"} -> matmul(%a, permute(%b) {perm=(0, 1, 3, 2)})
"""
from __future__ import annotations

import math

import numpy as np

from ..elementwise import BINARY
from ..linear import LINEAR, MATMUL
from ..reduce import REDUCE
from ..shape import PERMUTE, RESHAPE

__all__ = []


@MATMUL.imports("onnx", "MatMul")
def _matmul_from_onnx(call):
    return call.emit(MATMUL, [call.input(0), call.input(1)])


def _scaled(call, x, factor):
    if factor == 1:
        return x
    return call.emit(BINARY["mul"], [x, call.const(np.asarray(factor, dtype=x.type.dtype))])


@LINEAR.imports("onnx", "Gemm")
def _gemm_from_onnx(call):
    """alpha * A' @ B' + beta * C (A' = A^T when transA, B' likewise)."""
    a, alpha, beta = call.input(0), float(call.attr("alpha", 1.0)), float(call.attr("beta", 1.0))
    trans_a, trans_b, b_const = call.attr("transA", 0), call.attr("transB", 0), call.constant(1)
    c_const = call.constant(2)
    n = (b_const.shape[0] if trans_b else b_const.shape[1]) if b_const is not None else None
    if b_const is not None and not trans_a and alpha == 1:
        weight = call.rearranged(1, b_const if trans_b else np.ascontiguousarray(b_const.T))
        bias = None
        if c_const is not None and beta == 1 and c_const.size == n and c_const.ndim <= 2 and c_const.shape[-1] == n:
            bias = call.rearranged(2, c_const.reshape(n))
        y = call.emit(LINEAR, [a, weight, bias])
        if bias is not None or not call.has_input(2) or beta == 0:
            return y
    else:
        if trans_a:
            a = call.emit(PERMUTE, [a], {"perm": (1, 0)})
        b = call.input(1)
        if trans_b:
            b = call.emit(PERMUTE, [b], {"perm": (1, 0)})
        y = _scaled(call, call.emit(MATMUL, [a, b]), alpha)
        if not call.has_input(2) or beta == 0:
            return y
    return call.emit(BINARY["add"], [y, _scaled(call, call.input(2), beta)])


def _parse(equation, ranks):
    """``"bij,bjk->bik"`` -> ([["b","i","j"], ["b","j","k"]], ["b","i","k"]); '...' becomes digits."""
    text = equation.replace(" ", "")
    lhs, _, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError("operand count")
    parsed, ellipsis = [], []
    for term, rank in zip(terms, ranks):
        letters = term.replace("...", "")
        n = rank - len(letters) if "..." in term else 0
        dots = [str(i) for i in range(n)] if "..." in term else []
        ellipsis = dots if len(dots) > len(ellipsis) else ellipsis
        head, _, tail = term.partition("...")
        parsed.append(list(head) + dots + list(tail) if "..." in term else list(term))
    if "->" not in text:
        seen = [c for t in parsed for c in t]
        out = ellipsis + sorted(c for c in set(seen) if not c.isdigit() and seen.count(c) == 1)
    else:
        head, _, tail = rhs.partition("...")
        out = list(head) + (ellipsis if "..." in rhs else []) + list(tail)
    return parsed, out


def _sum_out(call, x, labels, keep):
    """Sum the axes of ``x`` whose labels are not in ``keep``; returns (value, labels)."""
    axes = tuple(i for i, c in enumerate(labels) if c not in keep)
    if not axes:
        return x, labels
    return call.emit(REDUCE["sum"], [x], {"axes": axes}), [c for c in labels if c in keep]


def _arranged(call, x, labels, order):
    perm = tuple(labels.index(c) for c in order)
    return x if perm == tuple(range(len(perm))) else call.emit(PERMUTE, [x], {"perm": perm})


@MATMUL.imports("onnx", "Einsum")
def _einsum_from_onnx(call):
    """Einsum of one or two operands as permutes, sums and one batched matmul."""
    values = call.inputs()
    try:
        terms, out = _parse(call.attr("equation"), [v.type.rank for v in values])
    except ValueError:
        call.unsupported(f"equation {call.attr('equation')!r} is not one portx parses")
    if len(values) > 2 or any(len(set(t)) != len(t) for t in terms):
        call.unsupported("einsum of more than two operands or with a repeated index (a diagonal)")
    if len(values) == 1:
        x, labels = _sum_out(call, values[0], terms[0], set(out))
        return _arranged(call, x, labels, out)
    (a, la), (b, lb) = (_sum_out(call, v, t, set(out) | set(o)) for v, t, o in
                        ((values[0], terms[0], terms[1]), (values[1], terms[1], terms[0])))
    batch = [c for c in out if c in la and c in lb]
    left = [c for c in out if c in la and c not in lb]
    right = [c for c in out if c in lb and c not in la]
    inner = [c for c in la if c in lb and c not in out]
    size = dict(zip(la, a.type.shape)) | dict(zip(lb, b.type.shape))
    dims = [math.prod(size[c] for c in group) for group in (batch, left, inner, right)]
    a = call.emit(RESHAPE, [_arranged(call, a, la, batch + left + inner)], {"shape": (dims[0], dims[1], dims[2])})
    b = call.emit(RESHAPE, [_arranged(call, b, lb, batch + inner + right)], {"shape": (dims[0], dims[2], dims[3])})
    y = call.emit(RESHAPE, [call.emit(MATMUL, [a, b])], {"shape": tuple(size[c] for c in batch + left + right)})
    return _arranged(call, y, batch + left + right, out)
