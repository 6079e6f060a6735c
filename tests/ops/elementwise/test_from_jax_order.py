"""Total-order comparisons (``lt_to``, ``le_to``, ``eq_to``: what ``jnp.searchsorted`` and multi-key sorts use) through
the JAX frontend, both targets: signed zeros, infinities and NaNs order as XLA's TOTALORDER says, ints as usual.
"""
import jax
import numpy as np
import pytest

from portx.frontends.jax import lower_jaxpr
from portx.ir import validate
from portx.verification.compare import run_reference
from tests.support.harness import emit_and_run

__all__ = []

lax = jax.lax
_SPECIAL = np.array([-np.nan, -np.inf, -2.5, -0.0, 0.0, 1.0, np.inf, np.nan], np.float32)
#: every pair of the special values, as two flat float32 inputs
_A, _B = (g.reshape(-1) for g in np.meshgrid(_SPECIAL, _SPECIAL, indexing="ij"))


@pytest.mark.parametrize("prim", [lax.lt_to_p, lax.le_to_p, lax.eq_to_p], ids=lambda p: p.name)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_total_order_comparisons(prim, dtype, target):
    a, b = (_A, _B) if dtype == "float32" else (np.arange(-4, 4, dtype=np.int32), np.full(8, 1, np.int32))
    closed = jax.make_jaxpr(prim.bind)(a, b)
    want = np.asarray(prim.bind(a, b))
    graph = validate(lower_jaxpr(closed, ["a", "b"], {}))
    np.testing.assert_array_equal(run_reference(graph, [a, b])[graph.outputs[0]], want)
    got, _ = emit_and_run(graph, [a, b], target)
    np.testing.assert_array_equal(np.asarray(got[0]), want)
