"""Test-only ops that portx has no rule for: the "unsupported op" of every test that needs one.

A real op (``torch.cumsum``, ``keras.layers.LSTM``) used as the unsupported example breaks unrelated tests
the day portx learns it. These are defined here, for the tests alone, so no rule can ever exist for them:

- torch: ``portx_test::unsupported`` and ``portx_test::also_unsupported`` (``torch.library`` custom ops with a
  fake kernel), which ``torch.export`` keeps as one opaque node each and the torch frontend cannot decompose.
  They run in eager torch and survive ``torch.export.save``/``load`` in this process.
- Keras: the layers ``UnsupportedLayer`` and ``AlsoUnsupportedLayer`` (registered serializable, so ``.keras``
  files holding them load in safe mode; a layer without a rule is traced through, and theirs binds the JAX
  primitive below), and the operation ``UnsupportedOp`` (keyed ``ops.UnsupportedOp``).
- JAX: the primitive ``portx_test_unsupported``, seen by the jaxpr frontend as one equation.

Example:
    >>> class Odd(nn.Module):
    ...     def forward(self, x):
    ...         return unsupported(x) + also_unsupported(x)
    >>> portx.inspect(Odd(), example_inputs=(torch.randn(2, 3),))   # UnsupportedOps naming both, exit 3
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import keras  # noqa: E402
import torch  # noqa: E402

__all__ = ["TORCH_OP", "TORCH_OP_TOO", "unsupported", "also_unsupported", "UnsupportedLayer",
           "AlsoUnsupportedLayer", "UnsupportedOp", "unsupported_op", "JAX_PRIMITIVE", "jax_unsupported"]

#: the names the torch frontend gives the two ops in its messages
TORCH_OP, TORCH_OP_TOO = "portx_test::unsupported", "portx_test::also_unsupported"


@torch.library.custom_op(TORCH_OP, mutates_args=())
def unsupported(x: torch.Tensor) -> torch.Tensor:
    """x + 1, in an op no portx rule knows."""
    return x + 1


@unsupported.register_fake
def _unsupported_fake(x):
    return torch.empty_like(x)


@torch.library.custom_op(TORCH_OP_TOO, mutates_args=())
def also_unsupported(x: torch.Tensor) -> torch.Tensor:
    """x * 2, in a second op no portx rule knows (for "every unsupported op is listed")."""
    return x * 2


@also_unsupported.register_fake
def _also_unsupported_fake(x):
    return torch.empty_like(x)


@keras.saving.register_keras_serializable(package="portx_test")
class UnsupportedLayer(keras.layers.Layer):
    """x + 1, in a layer no portx import rule knows (its call binds ``JAX_PRIMITIVE``, so tracing it fails too)."""

    def call(self, x):
        return jax_unsupported(x)


@keras.saving.register_keras_serializable(package="portx_test")
class AlsoUnsupportedLayer(keras.layers.Layer):
    """x + 1, in a second layer no portx import rule knows (traced, it binds ``JAX_PRIMITIVE`` too)."""

    def call(self, x):
        return jax_unsupported(x)


class UnsupportedOp(keras.Operation):
    """x + 1, as a ``keras.ops``-style operation no portx import rule knows (its key is ``ops.UnsupportedOp``)."""

    def call(self, x):
        return keras.ops.add(x, 1.0)

    def compute_output_spec(self, x):
        return keras.KerasTensor(x.shape, x.dtype)


def unsupported_op(x):
    """Apply ``UnsupportedOp`` the way a ``keras.ops`` function does: symbolic on KerasTensors, eager otherwise."""
    return UnsupportedOp()(x)


def _primitive():
    from jax.extend.core import Primitive

    prim = Primitive("portx_test_unsupported")
    prim.def_impl(lambda x: x + 1)
    prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    return prim


#: a JAX primitive no portx import rule knows
JAX_PRIMITIVE = _primitive()


def jax_unsupported(x):
    """Bind ``JAX_PRIMITIVE`` to ``x``: ``jax.make_jaxpr`` records one ``portx_test_unsupported`` equation."""
    return JAX_PRIMITIVE.bind(x)
