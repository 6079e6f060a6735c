"""ATen import rules for the special functions: ``aten::special_bessel_j0(x)`` ... and the polynomials
``aten::special_chebyshev_polynomial_t(x, n)`` with either operand a Python number (the ``x_scalar`` and
``n_scalar`` overloads). Integer operands are cast to the float result dtype first, as torch computes.

Example:
    aten::special_legendre_polynomial_p(%x, 3) -> legendre_polynomial_p(%x, %scalar)
"""
from __future__ import annotations

from .._util import named_rule
from ..elementwise import CAST, tensor_pair
from ..special import BESSEL, BESSEL_TABLE, POLYNOMIALS

__all__ = []


def _as(call, value, dtype):
    return value if value.type.dtype == dtype else call.emit(CAST, [value], {"dtype": dtype})


def _bessel_import(op):
    def import_torch(call):
        x = call.arg("self", call.arg("x"))
        return call.emit(op, [_as(call, x, call.out_type().dtype)])
    return named_rule(import_torch, op.name, "from_aten")


for _name, (_, _aten) in BESSEL_TABLE.items():
    BESSEL[_name].imports("torch", _aten)(_bessel_import(BESSEL[_name]))


def _polynomial_import(op):
    def import_torch(call):
        x, n = call.arg("x"), call.arg("n")
        x, n = tensor_pair(call, x, n)
        dtype = call.out_type().dtype
        return call.emit(op, [_as(call, x, dtype), _as(call, n, dtype)])
    return named_rule(import_torch, op.name, "from_aten")


for _name, _op in POLYNOMIALS.items():
    _op.imports("torch", f"aten::special_{_name}")(_polynomial_import(_op))
