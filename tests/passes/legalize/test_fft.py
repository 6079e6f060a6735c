"""The DFT as constant matmuls (passes/legalize/fft.py, torch-xla's op table): before/after graphs with the same
values as the un-rewritten op's NumPy reference, and long axes left to the emitter."""
import numpy as np
import pytest

import portx.ops  # noqa: F401
from portx.ir import GraphBuilder, TensorType, validate
from portx.passes.legalize import legalize
from portx.passes.legalize.fft import DFT_MAX
from portx.verification.compare import run_reference

FFT_OPS = {"fft_c2c", "fft_r2c", "fft_c2r"}


def _graph(op, shape, dtype, attrs):
    b = GraphBuilder()
    x = b.input("x", TensorType(shape, dtype))
    return validate(b.finish([b.emit(op, [x], attrs, scope="spectrum")]))


def _sample(shape, dtype, rng):
    x = rng.normal(size=shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


CASES = [
    pytest.param("fft_r2c", (3, 8), "float32", {"axes": (1,), "onesided": True}, id="rfft"),
    pytest.param("fft_r2c", (3, 7), "float32", {"axes": (1,), "norm": "sqrt", "onesided": True}, id="rfft-odd-sqrt"),
    pytest.param("fft_r2c", (4, 3, 6), "float32", {"axes": (0, 2), "onesided": True}, id="rfftn-axes-0-2"),
    pytest.param("fft_r2c", (4, 3), "float32", {"axes": (0,), "onesided": False}, id="fft-of-real-axis-0"),
    pytest.param("fft_r2c", (2, 5), "float64", {"axes": (1,), "norm": "n", "onesided": True}, id="rfft-float64"),
    pytest.param("fft_c2c", (2, 6), "complex64", {"axes": (1,), "forward": False, "norm": "n"}, id="ifft"),
    pytest.param("fft_c2c", (2, 4, 6), "complex64", {"axes": (1, 2), "norm": "n"}, id="fft2-forward"),
    pytest.param("fft_c2c", (2, 4, 4), "complex64", {"axes": (1, 2)}, id="fft2-square-one-table"),
    pytest.param("fft_c2r", (2, 5), "complex64", {"axes": (1,), "norm": "n", "last_size": 8}, id="irfft"),
    pytest.param("fft_c2r", (2, 5), "complex64", {"axes": (1,), "last_size": 9}, id="irfft-odd"),
    pytest.param("fft_c2r", (3, 4, 4), "complex64", {"axes": (0, 1, 2), "norm": "sqrt", "last_size": 6},
                 id="irfftn"),
]


@pytest.mark.parametrize("op, shape, dtype, attrs", CASES)
def test_a_short_transform_becomes_matmuls_with_the_same_values(op, shape, dtype, attrs):
    graph = _graph(op, shape, dtype, attrs)
    after = validate(legalize(graph, "torch-xla"))
    names = [n.op.name for n in after.nodes]
    assert not FFT_OPS & set(names) and "matmul" in names and after.outputs[0].name == graph.outputs[0].name
    assert {n.scope for n in after.nodes} == {"spectrum"}
    tables = [name for name in after.params if name.endswith("_cos")]
    assert len(tables) == len(set(a.shape for a in (after.params[t] for t in tables)))  # one table per length
    x = _sample(shape, dtype, np.random.default_rng(0))
    expected = run_reference(graph, [x])[graph.outputs[0]]
    got = run_reference(after, [x])[after.outputs[0]]
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_long_axis_and_keras_jax_keep_the_fft_op():
    long = _graph("fft_r2c", (2, DFT_MAX + 2), "float32", {"axes": (1,), "onesided": True})
    assert legalize(long, "torch-xla") is long
    short = _graph("fft_r2c", (2, 8), "float32", {"axes": (1,), "onesided": True})
    assert legalize(short, "keras-jax") is short  # keras.ops.fft lowers to stablehlo.fft, which TPUs run
