"""Special functions of ``torch.special`` that keras.ops and jax.scipy.special lack: Bessel and Airy functions and
the classical orthogonal polynomials.

``BESSEL`` holds the unary ops (``bessel_j0`` ... ``airy_ai``), each with scipy.special as its NumPy reference
(in float64, cast back). ``POLYNOMIALS`` holds the binary ops ``P_n(x)`` (``chebyshev_polynomial_t`` ...
``legendre_polynomial_p``) whose degree ``n`` is a tensor: each is declared by its three-term recurrence, written
once as arithmetic on ``x``, ``t`` (``2x - 1`` for the shifted Chebyshev kinds), ``k``, ``q = P_k`` and
``p = P_k-1``, which both the NumPy reference and the emitted Keras code evaluate. torch's conventions hold:
``n`` is truncated toward zero, ``n < 0`` gives 0, the Hermite kinds give NaN past degree 128 (float32), and the
Chebyshev kinds past a small degree and inside (-1, 1) take torch's closed form in acos (``CLOSED_FORMS``).

Example:
    >>> POLYNOMIALS["chebyshev_polynomial_t"].reference_rule(np.array([0.5]), np.array([2.0]))
    array([-0.5])
"""
from __future__ import annotations

import numpy as np

from ...ir import OpDef, TensorType
from .._util import broadcast_shapes, kind, named_rule, promote

__all__ = ["BESSEL", "BESSEL_TABLE", "POLYNOMIALS", "POLYNOMIAL_TABLE", "CLOSED_FORMS", "HERMITE_LIMIT",
           "polynomial_numpy"]


def _formula(text, **names):
    """One of this module's fixed formula strings (POLYNOMIAL_TABLE, CLOSED_FORMS) evaluated on ``names``."""
    return eval(text, {}, names)  # noqa: S307  # trusted: portx's own constant formulas, never model-file text


def _scipy(name, *lead):
    def reference(x):
        import scipy.special
        fn = getattr(scipy.special, name)
        y = fn(*lead, x.astype(np.float64))
        return np.asarray(y[0] if isinstance(y, tuple) else y).astype(x.dtype)
    return reference


#: name: (NumPy reference, aten name); the Keras emit rules are in to_keras.py, the torch ones in to_torch.py
BESSEL_TABLE = {
    "bessel_j0": (_scipy("j0"), "aten::special_bessel_j0"),
    "bessel_j1": (_scipy("j1"), "aten::special_bessel_j1"),
    "bessel_y0": (_scipy("y0"), "aten::special_bessel_y0"),
    "bessel_y1": (_scipy("y1"), "aten::special_bessel_y1"),
    "modified_bessel_i0": (_scipy("i0"), "aten::special_modified_bessel_i0"),
    "modified_bessel_i1": (_scipy("i1"), "aten::special_modified_bessel_i1"),
    "modified_bessel_k0": (_scipy("k0"), "aten::special_modified_bessel_k0"),
    "modified_bessel_k1": (_scipy("k1"), "aten::special_modified_bessel_k1"),
    "scaled_modified_bessel_k0": (_scipy("k0e"), "aten::special_scaled_modified_bessel_k0"),
    "scaled_modified_bessel_k1": (_scipy("k1e"), "aten::special_scaled_modified_bessel_k1"),
    "spherical_bessel_j0": (_scipy("spherical_jn", 0), "aten::special_spherical_bessel_j0"),
    "airy_ai": (_scipy("airy"), "aten::special_airy_ai"),
}

#: name: (shifted, P_1, P_k+1 from q = P_k and p = P_k-1); arithmetic on x, t, k, p, q (NumPy or JAX arrays)
POLYNOMIAL_TABLE = {
    "chebyshev_polynomial_t": (False, "t", "(t + t) * q - p"),
    "chebyshev_polynomial_u": (False, "t + t", "(t + t) * q - p"),
    "chebyshev_polynomial_v": (False, "t + t - 1.0", "(t + t) * q - p"),
    "chebyshev_polynomial_w": (False, "t + t + 1.0", "(t + t) * q - p"),
    "shifted_chebyshev_polynomial_t": (True, "t", "(t + t) * q - p"),
    "shifted_chebyshev_polynomial_u": (True, "t + t", "(t + t) * q - p"),
    "shifted_chebyshev_polynomial_v": (True, "t + t - 1.0", "(t + t) * q - p"),
    "shifted_chebyshev_polynomial_w": (True, "t + t + 1.0", "(t + t) * q - p"),
    "hermite_polynomial_h": (False, "x + x", "(x + x) * q - (k + k) * p"),
    "hermite_polynomial_he": (False, "x", "x * q - k * p"),
    "laguerre_polynomial_l": (False, "1.0 - x", "((k + k + 1.0 - x) * q - k * p) / (k + 1.0)"),
    "legendre_polynomial_p": (False, "x", "((k + k + 1.0) * x * q - k * p) / (k + 1.0)"),
}
#: name: (degree above which, for |t| < 1, torch takes the closed form instead, the closed form in theta = acos(t))
CLOSED_FORMS = {
    "chebyshev_polynomial_t": (6, "cos(n * theta)"),
    "chebyshev_polynomial_u": (8, "sin((n + 1.0) * theta) / sin(theta)"),
    "chebyshev_polynomial_v": (8, "cos((n + 0.5) * theta) / cos(theta / 2.0)"),
    "chebyshev_polynomial_w": (8, "sin((n + 0.5) * theta) / sin(theta / 2.0)"),
    "shifted_chebyshev_polynomial_t": (6, "cos(n * theta)"),
    "shifted_chebyshev_polynomial_u": (6, "sin((n + 1.0) * theta) / sin(theta)"),
    "shifted_chebyshev_polynomial_v": (6, "cos((n + 0.5) * theta) / cos(theta / 2.0)"),
    "shifted_chebyshev_polynomial_w": (4, "sin((n + 0.5) * theta) / sin(theta / 2.0)"),
}
#: torch gives NaN for Hermite polynomials of a float32 x past this degree (getHermitianLimit)
HERMITE_LIMIT = 128


def polynomial_numpy(name, x, n):
    """P_n(x) of the ``POLYNOMIAL_TABLE`` row ``name``, elementwise, by the recurrence, with torch's conventions;
    in x's float dtype, as torch computes (a float32 recurrence that overflows ends in NaN, as torch's does)."""
    shifted, first, step = POLYNOMIAL_TABLE[name]
    dtype = np.result_type(np.asarray(x).dtype, np.float32)
    x, n = np.broadcast_arrays(np.asarray(x, dtype), np.asarray(n, np.float64))
    n = np.trunc(np.where(np.isfinite(n), n, -1.0))
    t = x + x - 1.0 if shifted else x
    with np.errstate(all="ignore"):
        p, q = np.ones_like(x), _formula(first, x=x, t=t)
        out = np.where(n == 0, p, np.where(n == 1, q, 0.0))
        for k in range(1, int(n.max(initial=0))):
            p, q = q, _formula(step, x=x, t=t, k=dtype.type(k), p=p, q=q)
            out = np.where(n == k + 1, q, out)
        if name in CLOSED_FORMS:
            above, form = CLOSED_FORMS[name]
            theta = np.arccos(np.clip(t, -1.0, 1.0))
            closed = _formula(form, n=n.astype(dtype), theta=theta, cos=np.cos, sin=np.sin)
            out = np.where((n > above) & (np.abs(t) < 1.0), closed, out)
    if name.startswith("hermite"):
        out = np.where(n > HERMITE_LIMIT, np.nan, out)
    return out


def _float_type(x, **_attrs):
    return x if kind(x.dtype) >= 2 else x.with_dtype("float32")


def _make_bessel(name, ref):
    op = OpDef(name, ("x",), family="special", doc=f"torch.special.{name}, elementwise")
    op.infer(named_rule(_float_type, name, "type"))
    op.reference(named_rule(lambda x: np.asarray(ref(x)), name, "numpy"))
    return op


def _polynomial_type(x, n):
    dtype = promote(x, n)
    return TensorType(broadcast_shapes(x.shape, n.shape), dtype if kind(dtype) >= 2 else "float32")


def _make_polynomial(name):
    op = OpDef(name, ("x", "n"), family="special", doc=f"torch.special.{name}(x, n): degree n truncated toward 0")
    infer = op.infer(named_rule(_polynomial_type, name, "type"))

    def reference(x, n):
        want = infer(TensorType(np.shape(x), str(x.dtype)), TensorType(np.shape(n), str(n.dtype)))
        return polynomial_numpy(name, x, n).astype(want.dtype)
    op.reference(named_rule(reference, name, "numpy"))
    return op


BESSEL = {name: _make_bessel(name, ref) for name, (ref, _) in BESSEL_TABLE.items()}
POLYNOMIALS = {name: _make_polynomial(name) for name in POLYNOMIAL_TABLE}
