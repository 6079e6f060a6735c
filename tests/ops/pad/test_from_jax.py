"""``lax.pad`` through the JAX frontend (subclassed Keras models), both targets: low/high pads, crops and interior
padding (a reshape/pad interleave), against Keras."""
import jax
import keras
import numpy as np
import pytest

from portx.frontends.keras.subclassed import lower_keras_subclassed
from portx.ir import validate
from portx.verification.compare import run_reference
from tests.support.harness import compare_outputs, emit_and_run
from tests.support.keras_harness import seeded

lax = jax.lax

#: id: padding_config per axis of a (2, 3, 4) input
CASES = {
    "low-high": ((0, 0, 0), (1, 2, 0), (0, 0, 0)),
    "interior": ((0, 0, 0), (0, 0, 2), (0, 0, 1)),
    "interior-low-high-crop": ((0, 0, 0), (1, -1, 1), (-1, 2, 3)),
}


class _Pad(keras.Model):
    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config

    def call(self, x):
        return lax.pad(x, np.float32(-1.5), self.config)


@pytest.mark.parametrize("name", sorted(CASES))
def test_lax_pad(target, name):
    model, x = _Pad(CASES[name]), seeded((2, 3, 4))
    want = [np.asarray(model(x))]
    graph = validate(lower_keras_subclassed(model, [x]))
    assert "pad" in {n.op.name for n in graph.nodes}
    env = run_reference(graph, [x])
    compare_outputs(target, graph, want, [env[v] for v in graph.outputs], 1e-6, 1e-6, "keras (reference)")
    got, _ = emit_and_run(graph, [x], target)
    compare_outputs(target, graph, want, got, 1e-6, 1e-6, "keras")


def test_interior_padding_on_a_size_one_axis_is_the_input():
    x = seeded((2, 1, 4))
    graph = validate(lower_keras_subclassed(_Pad(((0, 0, 0), (0, 0, 3), (0, 0, 0))), [x]))
    np.testing.assert_array_equal(run_reference(graph, [x])[graph.outputs[0]], x)
