"""The gradient program's compile options (Note [gradient compile] in verification/grad_program.py): unoptimized
where that is only a faster compile, XLA's defaults where a convolution would run as a slow loop nest."""
import jax
import jax.numpy as jnp
import pytest

from portx.verification.grad_program import slow_unoptimized


def _grad_text(image, window, stride, layout=("NHWC", "HWIO", "NHWC")):
    x = jnp.zeros((1, image, image, 3) if layout[0] == "NHWC" else (1, 3, image, image), jnp.float32)
    w = jnp.zeros((window, window, 3, 8) if layout[1] == "HWIO" else (8, 3, window, window), jnp.float32)

    def loss(x, w):
        return jnp.sum(jax.lax.conv_general_dilated(x, w, (stride, stride), "VALID", dimension_numbers=layout))

    return jax.jit(jax.grad(loss, argnums=(0, 1))).lower(x, w).as_text()


@pytest.mark.parametrize("layout", [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW")])
def test_a_patch_embedding_gradient_compiles_with_the_defaults(layout):
    """The input gradient of a 16x16 stride-16 patch embedding: 134 s unoptimized, 0.06 s with the defaults."""
    assert slow_unoptimized(_grad_text(64, 16, 16, layout))


@pytest.mark.parametrize("window, stride", [(3, 2), (7, 2), (4, 4), (3, 1)])
def test_small_strided_convolutions_keep_the_fast_compile(window, stride):
    assert not slow_unoptimized(_grad_text(32, window, stride))
