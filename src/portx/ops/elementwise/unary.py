"""Unary elementwise ops: math and activations, declared from one table.

Each row of ``UNARY_TABLE`` gives the NumPy meaning, the Keras expression, the ATen names and the
attributes; each op still gets its own OpDef and rules with descriptive names. This module declares
the OpDefs with their shape rules and NumPy references; ``from_torch.py`` registers the ATen import
rules and ``to_keras.py`` the Keras emit rules from the same rows.

Example:
    >>> from portx.ops.elementwise.unary import UNARY
    >>> UNARY["relu"].reference_rule(np.array([-1.0, 2.0]))
    array([0., 2.])
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import OpDef
from .._util import named_rule, same_type

__all__ = ["UNARY", "UNARY_TABLE", "BOOL_RESULTS", "erf_np"]

def _erf(x):
    """erf in float64 by SciPy (a JAX dependency), in C: ``np.vectorize(math.erf)`` is 50x slower on a ViT's GELUs."""
    from scipy.special import erf

    return erf(np.asarray(x, dtype=np.float64))


def erf_np(x):
    """Elementwise erf in float64, cast back to x's dtype."""
    return _erf(x).astype(x.dtype)


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _softplus(x, beta=1.0, threshold=20.0):
    x64 = x.astype(np.float64) * beta
    return np.where(x64 > threshold, x, np.logaddexp(0.0, x64) / beta).astype(x.dtype)


def _gelu(x, approximate="none"):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    else:
        y = 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))
    return y.astype(x.dtype)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))).astype(x.dtype)


def _special(name):
    """The scipy.special function ``name``, computed in float64 and cast back (scipy comes with jax)."""
    def reference(x, **attrs):
        import scipy.special
        args = [attrs["n"]] if "n" in attrs else []
        return getattr(scipy.special, name)(*args, x.astype(np.float64)).astype(x.dtype)
    return reference


#: name: (reference, keras expression template, aten names, attrs{name: (default, aten args)})
UNARY_TABLE = {
    "relu": (lambda x: np.maximum(x, 0).astype(x.dtype), "ops.relu({x})", ["aten::relu"], {}),
    "clamp": (lambda x, min=None, max=None: np.clip(x, min, max).astype(x.dtype),
              "ops.clip({x}, {min}, {max})", ["aten::clamp", "aten::clamp_min", "aten::clamp_max",
                                              "aten::hardtanh"],
              {"min": (None, ("min", "min_val")), "max": (None, ("max", "max_val"))}),
    "leaky_relu": (lambda x, negative_slope=0.01: np.where(x >= 0, x, x * negative_slope).astype(x.dtype),
                   "ops.leaky_relu({x}, negative_slope={negative_slope})", ["aten::leaky_relu"],
                   {"negative_slope": (0.01, ("negative_slope",))}),
    "elu": (_elu, "ops.elu({x}, alpha={alpha})", ["aten::elu"], {"alpha": (1.0, ("alpha",))}),
    "gelu": (_gelu, "ops.gelu({x}, approximate={approximate_bool})", ["aten::gelu"],
             {"approximate": ("none", ("approximate",))}),
    "silu": (lambda x: (x * _sigmoid(x)).astype(x.dtype), "ops.silu({x})", ["aten::silu"], {}),
    "sigmoid": (_sigmoid, "ops.sigmoid({x})", ["aten::sigmoid"], {}),
    "tanh": (lambda x: np.tanh(x), "ops.tanh({x})", ["aten::tanh"], {}),
    "hardswish": (lambda x: (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype), "ops.hard_silu({x})",
                  ["aten::hardswish"], {}),
    "hardsigmoid": (lambda x: (np.clip(x + 3, 0, 6) / 6).astype(x.dtype), "ops.hard_sigmoid({x})",
                    ["aten::hardsigmoid"], {}),
    "softplus": (_softplus, "ops.where({x} * {beta} > {threshold}, {x}, ops.softplus({x} * {beta}) / {beta})",
                 ["aten::softplus"], {"beta": (1.0, ("beta",)), "threshold": (20.0, ("threshold",))}),
    "mish": (lambda x: (x * np.tanh(_softplus(x))).astype(x.dtype), "{x} * ops.tanh(ops.softplus({x}))",
             ["aten::mish"], {}),
    "exp": (np.exp, "ops.exp({x})", ["aten::exp"], {}),
    "log": (np.log, "ops.log({x})", ["aten::log"], {}),
    "neg": (np.negative, "ops.negative({x})", ["aten::neg"], {}),
    "abs": (np.abs, "ops.abs({x})", ["aten::abs"], {}),
    "sqrt": (np.sqrt, "ops.sqrt({x})", ["aten::sqrt"], {}),
    "rsqrt": (lambda x: (1 / np.sqrt(x)).astype(x.dtype), "ops.rsqrt({x})", ["aten::rsqrt"], {}),
    "reciprocal": (lambda x: (1 / x).astype(x.dtype), "ops.reciprocal({x})", ["aten::reciprocal"], {}),
    "erf": (erf_np, "ops.erf({x})", ["aten::erf"], {}),
    "sin": (np.sin, "ops.sin({x})", ["aten::sin"], {}),
    "cos": (np.cos, "ops.cos({x})", ["aten::cos"], {}),
    "floor": (np.floor, "ops.floor({x})", ["aten::floor"], {}),
    "ceil": (np.ceil, "ops.ceil({x})", ["aten::ceil"], {}),
    "sign": (np.sign, "ops.sign({x})", ["aten::sign"], {}),
    "logical_not": (np.logical_not, "ops.logical_not({x})", ["aten::logical_not"], {}),
    "bitwise_not": (np.invert, "ops.bitwise_not({x})", [], {}),  # integers (bool is logical_not)
    "log1p": (np.log1p, "ops.log1p({x})", ["aten::log1p"], {}),
    "expm1": (np.expm1, "ops.expm1({x})", ["aten::expm1"], {}),
    "exp2": (np.exp2, "ops.exp2({x})", ["aten::exp2"], {}),
    "cbrt": (np.cbrt, "ops.cbrt({x})", [], {}),  # real cube root (negative for negative x); ATen has none
    "trunc": (np.trunc, "ops.trunc({x})", ["aten::trunc", "aten::fix"], {}),
    "round": (np.round, "ops.round({x})", [], {}),  # half to even, as torch.round and jnp.round
    "asin": (np.arcsin, "ops.arcsin({x})", ["aten::asin"], {}),
    "acos": (np.arccos, "ops.arccos({x})", ["aten::acos"], {}),
    "atan": (np.arctan, "ops.arctan({x})", ["aten::atan"], {}),
    "asinh": (np.arcsinh, "ops.arcsinh({x})", ["aten::asinh"], {}),
    "acosh": (np.arccosh, "ops.arccosh({x})", ["aten::acosh"], {}),
    "atanh": (np.arctanh, "ops.arctanh({x})", ["aten::atanh"], {}),
    "isnan": (np.isnan, "ops.isnan({x})", ["aten::isnan"], {}),
    "isinf": (np.isinf, "ops.isinf({x})", ["aten::isinf"], {}),
    "isfinite": (np.isfinite, "ops.isfinite({x})", ["aten::isfinite"], {}),
    # the identity, whose gradient is zero: ``x.detach()`` / ``lax.stop_gradient`` (so that training agrees)
    "stop_gradient": (lambda x: x, "ops.stop_gradient({x})", ["aten::detach"], {}),
    "log2": (np.log2, "ops.log2({x})", ["aten::log2"], {}),
    "log10": (np.log10, "ops.log10({x})", ["aten::log10"], {}),
    "tan": (np.tan, "ops.tan({x})", ["aten::tan"], {}),
    "sinh": (np.sinh, "ops.sinh({x})", ["aten::sinh"], {}),
    "cosh": (np.cosh, "ops.cosh({x})", ["aten::cosh"], {}),
    "signbit": (np.signbit, "ops.signbit({x})", ["aten::signbit"], {}),
    # special functions: a "special." template is a JaxFunction of jax.scipy.special (keras.ops lacks them)
    "erfc": (_special("erfc"), "ops.erfc({x})", ["aten::erfc", "aten::special_erfc"], {}),
    "erfinv": (_special("erfinv"), "ops.erfinv({x})", ["aten::erfinv", "aten::special_erfinv"], {}),
    "i0": (_special("i0"), "ops.i0({x})", ["aten::i0", "aten::special_i0"], {}),
    "lgamma": (_special("gammaln"), "special.gammaln", ["aten::lgamma", "aten::special_gammaln"], {}),
    "digamma": (_special("digamma"), "special.digamma", ["aten::digamma", "aten::special_digamma",
                                                          "aten::special_psi"], {}),
    "polygamma": (_special("polygamma"), "special.polygamma", ["aten::polygamma", "aten::special_polygamma"],
                  {"n": (0, ("n",))}),
    "i0e": (_special("i0e"), "special.i0e", ["aten::special_i0e"], {}),
    "i1": (_special("i1"), "special.i1", ["aten::special_i1"], {}),
    "i1e": (_special("i1e"), "special.i1e", ["aten::special_i1e"], {}),
    "ndtri": (_special("ndtri"), "special.ndtri", ["aten::special_ndtri"], {}),
    "erfcx": (_special("erfcx"), "special.erfcx", ["aten::special_erfcx"], {}),
}
#: ops whose result is bool whatever the input dtype
BOOL_RESULTS = {"logical_not", "isnan", "isinf", "isfinite", "signbit"}


def _bool_type(x, **_attrs):
    """Shape rule for predicates such as logical_not: same shape, bool."""
    return x.with_dtype("bool")


def _unary_reference(name, ref):
    def reference(x, **attrs):
        return np.asarray(ref(x, **attrs))
    return named_rule(reference, name, "numpy")


def _make_unary(name, ref, attr_spec):
    op = OpDef(name, ("x",), {k: d for k, (d, _) in attr_spec.items()}, family="elementwise")
    op.infer(_bool_type if name in BOOL_RESULTS else same_type)
    op.reference(_unary_reference(name, ref))
    return op


UNARY = {name: _make_unary(name, ref, attr_spec) for name, (ref, _, _, attr_spec) in UNARY_TABLE.items()}
