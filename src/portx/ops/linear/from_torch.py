"""ATen import rules for linear and matmul: ``aten::linear``, ``aten::matmul`` / ``bmm`` / ``mm``, ``aten::addmm``.

``addmm`` (what older linear decompositions export, with a folded ``W.T``) builds a matmul and
elementwise ops, so it hangs on MATMUL, the op it produces.

Example:
    aten::addmm(%b, %x, %w_t) -> add(matmul(%x, %w_t), %b)
"""
from __future__ import annotations

from ..elementwise import BINARY, scalar_const
from ..linear import LINEAR, MATMUL

__all__ = []


@LINEAR.imports("torch", "aten::linear")
def _linear_from_aten(call):
    return call.emit(LINEAR, [call.arg("input"), call.arg("weight"), call.arg("bias")])


@MATMUL.imports("torch", "aten::addmm")
def _addmm_from_aten(call):
    """beta * self + alpha * (mat1 @ mat2), as matmul and elementwise ops.

    As in torch, beta == 0 ignores ``self`` entirely (its NaN and Inf do not propagate).
    """
    y = call.emit(MATMUL, [call.arg("mat1"), call.arg("mat2")])
    alpha, beta = call.arg("alpha", 1), call.arg("beta", 1)
    if alpha != 1:
        y = call.emit(BINARY["mul"], [y, scalar_const(call, alpha, y)])
    if beta == 0:
        return y
    bias = call.arg("self")
    if beta != 1:
        bias = call.emit(BINARY["mul"], [bias, scalar_const(call, beta, bias)])
    return call.emit(BINARY["add"], [y, bias])


@MATMUL.imports("torch", "aten::matmul", "aten::bmm", "aten::mm")
def _matmul_from_aten(call):
    return call.emit(MATMUL, [call.arg("self"), call.arg("other", call.arg("mat2"))])
