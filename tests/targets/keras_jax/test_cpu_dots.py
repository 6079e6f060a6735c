"""Narrow-float dots widened for the CPU (targets/keras_jax/cpu_dots.py, Note [bfloat16 dots on the CPU]): the same
outputs as the plain run to the dtype's resolution, the dots asked for float32 results, nested jits included, and a
float32 function left as it is."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from portx.targets.keras_jax.cpu_dots import widened_dots


def _net(x, weights):
    for w in weights:
        x = jax.nn.silu(jax.jit(jnp.matmul)(x, w))  # a nested jit: its dot is widened too
    return {"y": x, "sum": x.sum()}


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_narrow_dots_give_the_plain_outputs_with_float32_products(dtype):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((4, 64)), dtype)
    weights = [jnp.asarray(rng.standard_normal((64, 64)) * 0.1, dtype) for _ in range(3)]
    plain, widened = jax.jit(_net)(x, weights), jax.jit(widened_dots(_net))(x, weights)
    assert set(widened) == {"y", "sum"} and widened["y"].dtype == dtype and widened["y"].shape == (4, 64)
    tol = float(jnp.finfo(dtype).eps) * 4
    np.testing.assert_allclose(np.asarray(widened["y"], np.float32), np.asarray(plain["y"], np.float32),
                               atol=tol, rtol=tol)
    text = str(jax.make_jaxpr(widened_dots(_net))(x, weights))
    assert text.count("preferred_element_type=float32") == 3, text


def test_a_float32_function_is_called_as_it_is():
    x, weights = jnp.ones((2, 3), jnp.float32), [jnp.ones((3, 3))]
    assert str(jax.make_jaxpr(widened_dots(_net))(x, weights)) == str(jax.make_jaxpr(_net)(x, weights))
