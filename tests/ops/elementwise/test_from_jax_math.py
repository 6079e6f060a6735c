"""Elementwise JAX primitives (special functions, rounding, shifts, bit casts) through the JAX frontend, both targets.

Each case is a subclassed Keras model whose ``call`` uses jax.lax / jax.scipy.special / keras.ops directly, traced
to a jaxpr and converted; the IR's NumPy reference and each target's emitted model are compared with Keras.
"""
import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from keras import ops

from portx.frontends.keras.subclassed import lower_keras_subclassed
from portx.ir import validate
from portx.verification.compare import run_reference
from tests.support.harness import compare_outputs, emit_and_run
from tests.support.keras_harness import check_keras_model, seeded

lax, special = jax.lax, jax.scipy.special


def _pos(x):
    return jnp.abs(x) + 0.25


def _ints(x):
    return (x * 8).astype(jnp.int32)


#: id: (program, IR ops the graph must hold)
CASES = {
    "lgamma-digamma": (lambda x: lax.lgamma(_pos(x)) + lax.digamma(_pos(x)), ["lgamma", "digamma"]),
    "igamma": (lambda x: lax.igamma(_pos(x), _pos(x * 2)) + lax.igammac(_pos(x), _pos(x + 1)), ["igamma", "igammac"]),
    "zeta-polygamma": (lambda x: lax.zeta(_pos(x) + 1.5, _pos(x)) + lax.polygamma(1.0, _pos(x)),
                       ["zeta", "polygamma"]),
    "erf_inv-erfc": (lambda x: lax.erf_inv(jnp.tanh(x) * 0.9) + lax.erfc(x), ["erfinv", "erfc"]),
    "bessel": (lambda x: lax.bessel_i0e(x) + lax.bessel_i1e(x) + ops.i0(x), ["i0e", "i1e"]),
    "log1p-expm1-exp2": (lambda x: lax.log1p(_pos(x) * 1e-4) * 1e4 + lax.expm1(x) + lax.exp2(x),
                         ["log1p", "expm1", "exp2"]),
    "trig": (lambda x: lax.tan(x * 0.4) + lax.sinh(x) + lax.cosh(x) + lax.asin(jnp.tanh(x)) + lax.acos(jnp.tanh(x))
             + lax.atan(x) + lax.asinh(x) + lax.acosh(_pos(x) + 1) + lax.atanh(jnp.tanh(x) * 0.5) + lax.atan2(x, x + 1),
             ["tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "atan2"]),
    "cbrt": (lambda x: lax.cbrt(x) + ops.cbrt(x * 3), ["cbrt"]),
    "round-half-even": (lambda x: lax.round(x * 4, lax.RoundingMethod.TO_NEAREST_EVEN), ["round"]),
    "round-away-from-zero": (lambda x: lax.round(jnp.round(x * 4) / 2, lax.RoundingMethod.AWAY_FROM_ZERO),
                             ["trunc", "sign"]),
    "is_finite-nextafter-rem": (lambda x: lax.is_finite(jnp.log(x)).astype(jnp.float32) + lax.nextafter(x, x + 1.0)
                                + lax.rem(x, 0.7), ["isfinite", "nextafter", "fmod"]),
    "shifts": (lambda x: (lax.shift_left(_ints(x), 2) + lax.shift_right_arithmetic(_ints(x), 1)
                          + lax.shift_right_logical(_ints(x), 28)).astype(jnp.float32),
               ["bitwise_left_shift", "bitwise_right_shift", "bitwise_and"]),
    "bitcast": (lambda x: lax.bitcast_convert_type(lax.bitcast_convert_type(x, jnp.int32) ^ 1, jnp.float32),
                ["bitcast", "bitwise_xor"]),
    "signbit-argmax": (lambda x: ops.cast(ops.signbit(x * 0.0), "float32")
                       + ops.cast(ops.argmax(x, axis=-1), "float32")[..., None], ["bitcast", "argmax"]),
}


class _Program(keras.Model):
    """One JAX program per case, in a subclassed model (traced through the JAX frontend)."""

    def __init__(self, fn, **kwargs):
        super().__init__(**kwargs)
        self.fn = fn

    def call(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_math_primitive(target, name):
    fn, want_ops = CASES[name]
    model, x = _Program(fn), seeded((2, 3, 4))
    want = [np.asarray(y) for y in keras.tree.flatten(model(x))]
    graph = validate(lower_keras_subclassed(model, [x]))
    assert set(want_ops) <= {n.op.name for n in graph.nodes}, sorted({n.op.name for n in graph.nodes})
    env = run_reference(graph, [x])
    compare_outputs(target, graph, want, [env[v] for v in graph.outputs], 1e-5, 1e-4, "keras (reference)")
    got, _ = emit_and_run(graph, [x], target)
    compare_outputs(target, graph, want, got, 1e-5, 1e-4, "keras")


#: id: (keras.ops program in a functional model, IR ops the graph must hold)
FUNCTIONAL = {
    "logs-hyperbolic": (lambda x: ops.log2(ops.abs(x) + 1) + ops.log10(ops.abs(x) + 1) + ops.sinh(x) + ops.cosh(x)
                        + ops.tan(x * 0.4), ["log2", "log10", "sinh", "cosh", "tan"]),
    "special": (lambda x: ops.erfinv(ops.tanh(x) * 0.9) + ops.erfc(x) + ops.i0(x), ["erfinv", "erfc", "i0"]),
    "signbit-round": (lambda x: ops.cast(ops.signbit(x), "float32") + ops.round(x * 3) + ops.round(x, 1),
                      ["signbit", "round"]),
    "mod-fmod-hypot-nextafter": (lambda x: ops.mod(x, 0.7) + ops.fmod(x, 0.7) + ops.hypot(x, x + 1)
                                 + ops.nextafter(x, x + 1), ["remainder", "fmod", "hypot", "nextafter"]),
    "shifts": (lambda x: ops.cast(ops.left_shift(ops.cast(x * 4, "int32"), 2)
                                  + ops.right_shift(ops.cast(x * 8, "int32"), 1), "float32"),
               ["bitwise_left_shift", "bitwise_right_shift"]),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_keras_ops_math(target, name):
    fn, want_ops = FUNCTIONAL[name]
    x = keras.Input((3, 4))
    graph = check_keras_model(keras.Model(x, fn(x)), seeded((2, 3, 4)), target=target, emit_rtol=1e-5)
    assert set(want_ops) <= {n.op.name for n in graph.nodes}, sorted({n.op.name for n in graph.nodes})
