"""Keras-JAX emit rules for the special functions.

``modified_bessel_i0``/``i1`` are ``jax.scipy.special.i0``/``i1`` (a ``JaxFunction`` layer), ``spherical_bessel_j0``
is sin(x)/x with torch's series near 0, and the other Bessel and Airy functions are a ``CephesFunction`` layer
running the kernel of kernels.py (torch's own approximations, in keras.ops). An orthogonal polynomial is a layer of
its own, written from its recurrence (``ChebyshevPolynomialT(limit=4)(x, n)``); ``limit`` is the largest degree
when ``n`` is a constant, so the loop has a fixed length, else the loop runs to max(n) at run time.

Example generated code:
    j0 = CephesFunction('bessel_j0')(x)
    p = LegendrePolynomialP(limit=None)(x, n)
"""
from __future__ import annotations

import numpy as np

from .._util import named_rule
from ..sort.to_keras import jax_function
from ..special import BESSEL, POLYNOMIALS
from .kernels import CEPHES_HELPERS, CEPHES_KERNELS, KERNEL_NEEDS, polynomial_layer, table_source

__all__ = []

#: torch's series of sin(x)/x for |x| < 0.5, innermost coefficient first
_SINC_SERIES = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0)


def _define_kernel(k, name) -> None:
    calls, tables = KERNEL_NEEDS[name]
    k.define("CephesFunction", CEPHES_HELPERS)
    for table in tables:
        k.define(f"CEPHES_{table}", table_source(table))
    for callee in calls:
        _define_kernel(k, callee)
    k.define(f"cephes_{name}", CEPHES_KERNELS[name])


def _bessel_emit(name):
    def emit(node, k):
        x = k.ref(node.inputs[0])
        if name in ("modified_bessel_i0", "modified_bessel_i1"):
            k.assign(node, jax_function(k, f"special.{name[-2:]}", [x]))
            return
        if name == "spherical_bessel_j0":
            sq = k.temp(node, f"ops.square({x})", "sq")
            series = "0.0"
            for c in _SINC_SERIES:
                series = f"ops.multiply({sq}, ops.add({c!r}, {series}))"
            near = f"ops.add(1.0, {series})"
            far = f"ops.where(ops.isinf({x}), 0.0, ops.divide(ops.sin({x}), {x}))"
            k.assign(node, f"ops.where(ops.less(ops.abs({x}), 0.5), {near}, {far})")
            return
        _define_kernel(k, name)
        k.assign(node, f"CephesFunction({k.lit(name)})({x})")
    return named_rule(emit, name, "to_keras")


for _name, _op in BESSEL.items():
    _op.emits("keras-jax")(_bessel_emit(_name))


def _limit(k, n):
    """The largest degree when ``n`` is a stored constant, else None (the loop then runs to max(n))."""
    if not k.is_param(n):
        return None
    values = np.asarray(k.param(n), np.float64)
    finite = np.trunc(values[np.isfinite(values)])
    return int(finite.max(initial=0))


def _polynomial_emit(name):
    def emit(node, k):
        cls, source = polynomial_layer(name)
        k.define(cls, source)
        x, n = node.inputs
        k.assign(node, f"{cls}(limit={k.lit(_limit(k, n))})({k.ref(x)}, {k.ref(n)})")
    return named_rule(emit, name, "to_keras")


for _name, _op in POLYNOMIALS.items():
    _op.emits("keras-jax")(_polynomial_emit(_name))
