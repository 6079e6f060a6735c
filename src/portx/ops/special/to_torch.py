"""torch-xla emit rules for the special functions: the ``torch.special`` function of the same name.

Example:
    chebyshev = torch.special.chebyshev_polynomial_t(x, n)
"""
from __future__ import annotations

from .._util import named_rule
from ..special import BESSEL, POLYNOMIALS

__all__ = []


def _emit(name):
    def emit(node, t):
        args = ", ".join(t.ref(v) for v in node.inputs)
        t.assign(node, f"torch.special.{name}({args})")
    return named_rule(emit, name, "to_torch")


for _name, _op in {**BESSEL, **POLYNOMIALS}.items():
    _op.emits("torch-xla")(_emit(_name))
