"""A conversion that goes wrong on purpose: the smallest model with a named middle layer, and a Keras emit rule
broken for the block (relu written as abs), so verification fails at ``act`` (report, explorer, equivalence tests).

Example:
    >>> with broken_keras_relu(), pytest.raises(VerificationFailed):
    ...     portx.convert(FcReluFc(), example_inputs=(torch.randn(2, 8),))
"""
import contextlib

import pytest
from torch import nn

from portx.ops.elementwise.unary import UNARY

__all__ = ["FcReluFc", "broken_keras_relu"]


class FcReluFc(nn.Module):
    """fc1 -> act (ReLU) -> fc2."""

    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def _abs_for_relu(node, k):
    k.assign(node, f"ops.abs({k.ref(node.inputs[0])})")


@contextlib.contextmanager
def broken_keras_relu():
    """Within the block the keras-jax relu rule emits ``ops.abs``: the emitted model differs from the source."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(UNARY["relu"].emit_rules, "keras-jax", _abs_for_relu)
        yield
