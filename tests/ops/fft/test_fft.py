"""fft family: torch.fft and complex views, torch -> IR -> NumPy reference and both targets' emitted models;
keras.ops.fft/rfft/irfft/stft in a subclassed Keras model through the JAX frontend.

Complex values stay complex64 in the IR (Note [complex values] in src/portx/ops/fft/__init__.py); a case
whose output is complex is compared as (real, imag) pairs (verification/compare.py).
"""
import tempfile

import keras
import numpy as np
import pytest
import torch

from portx.frontends.torch import export_module, lower_exported
from portx.ops.fft import divisor
from portx.passes.legalize.fft import DFT_MAX, dft_tables, irfft_tables
from portx.passes.pipeline import run_passes
from portx.targets.torch_xla.emitter import emit_torch
from portx.targets.codegen import literal
from portx.frontends.keras.subclassed import lower_keras_subclassed
from portx.ir import validate
from portx.verification.compare import run_reference
from tests.support.harness import Wrap, check_torch_op, compare_outputs, emit_and_run
from tests.support.keras_harness import check_keras_model, seeded

TOL = {"atol": 1e-4, "rtol": 1e-4}


def _fn(fn):
    return lambda: fn


# (function factory, input shape, an IR op the graph must hold)
CASES = [
    pytest.param(_fn(lambda x: torch.fft.rfft(x)), (3, 8), "fft_r2c", id="rfft"),
    pytest.param(_fn(lambda x: torch.fft.rfft(x, norm="ortho")), (3, 7), "fft_r2c", id="rfft-ortho-odd"),
    pytest.param(_fn(lambda x: torch.fft.fft(x, dim=0)), (4, 3), "fft_r2c", id="fft-real-input-dim0"),
    pytest.param(_fn(lambda x: torch.fft.ifft(torch.fft.fft(x))), (2, 6), "fft_c2c", id="ifft-of-fft"),
    pytest.param(_fn(lambda x: torch.fft.irfft(torch.fft.rfft(x), n=8)), (2, 8), "fft_c2r", id="irfft-roundtrip"),
    pytest.param(_fn(lambda x: torch.fft.irfft(torch.fft.rfft(x), n=10, norm="forward")), (2, 8), "fft_c2r",
                 id="irfft-n-forward"),
    pytest.param(_fn(lambda x: torch.fft.fft2(x, norm="forward")), (2, 4, 6), "fft_c2c", id="fft2-forward"),
    pytest.param(_fn(lambda x: torch.fft.rfftn(x, dim=(0, 2))), (4, 3, 6), "fft_r2c", id="rfftn-dims-0-2"),
    pytest.param(_fn(lambda x: torch.fft.irfftn(torch.fft.rfftn(x), s=(3, 4, 6))), (3, 4, 6), "fft_c2r",
                 id="irfftn"),
    pytest.param(_fn(lambda x: torch.fft.ifftn(x, dim=(1, 2), norm="ortho")), (2, 5, 3), "fft_c2c", id="ifftn-ortho"),
    pytest.param(_fn(lambda x: torch.fft.hfft(torch.fft.fft(x))), (2, 5), "fft_c2r", id="hfft"),
    pytest.param(_fn(lambda x: torch.fft.ihfft(x).resolve_conj()), (2, 6), "conj", id="ihfft"),
    pytest.param(_fn(lambda x: torch.view_as_real(torch.fft.fft(x))), (3, 4), "view_as_real", id="view-as-real"),
    pytest.param(_fn(lambda x: torch.view_as_complex(x.reshape(3, 2, 2))), (3, 4), "view_as_complex",
                 id="view-as-complex"),
    pytest.param(_fn(lambda x: torch.real(torch.fft.fft(x)) + torch.imag(torch.fft.fft(x))), (2, 4), "view_as_real",
                 id="real-imag"),
    pytest.param(_fn(lambda x: torch.complex(x, x * 2)), (2, 3), "complex", id="complex"),
    pytest.param(_fn(lambda x: torch.complex(x[:, :1], x[0])), (3, 3), "complex", id="complex-broadcast"),
    pytest.param(_fn(lambda x: torch.angle(torch.complex(x, x.flip(1)))), (2, 3), "angle", id="angle"),
    pytest.param(_fn(lambda x: torch.angle(x)), (2, 3), "angle", id="angle-of-real"),
    pytest.param(_fn(lambda x: torch.polar(x.abs(), x)), (2, 3), "complex", id="polar"),
    pytest.param(_fn(lambda x: torch.conj_physical(torch.fft.fft(x))), (2, 3), "conj", id="conj"),
    pytest.param(_fn(lambda x: torch.fft.fft(x) * 2 + 1), (2, 3), "fft_r2c", id="complex-arithmetic"),
    pytest.param(_fn(lambda x: torch.abs(torch.fft.fft(x))), (2, 3), "complex_abs", id="abs-of-complex"),
]


@pytest.mark.parametrize("make, shape, op", CASES)
def test_fft_case(target, make, shape, op):
    torch.manual_seed(0)
    check_torch_op(make(), torch.randn(shape), expect_ops=[op], target=target, **TOL)


def test_divisor_and_complex_literals():
    assert divisor("sqrt", (4, 4)) == 4.0 and divisor("n", (3, 2)) == 6.0 and divisor("none", (5,)) == 1.0
    assert eval(literal(complex(1.5, -2.0))) == complex(1.5, -2.0)
    assert literal(complex(float("inf"), 0.0)) == 'complex(float("inf"), 0.0)'
    assert literal(np.complex64(1j)) == "complex(0.0, 1.0)"


class _Spectrum(keras.Model):
    """keras.ops.fft / rfft / irfft / stft / view_as_complex on one input (traced through the JAX frontend)."""

    def __init__(self, which, **kwargs):
        super().__init__(**kwargs)
        self.which = which

    def call(self, x):
        ops = keras.ops
        if self.which == "fft":
            return ops.fft((x, ops.flip(x, axis=-1)))
        if self.which == "fft2":
            return ops.fft2((x, x * 0.5))
        if self.which == "rfft":
            return ops.rfft(x)
        if self.which == "irfft":
            return ops.irfft(ops.rfft(x), fft_length=8)
        if self.which == "stft":
            return ops.stft(x, sequence_length=8, sequence_stride=4, fft_length=8)
        return ops.abs(ops.view_as_complex(ops.stack([x, x * 2.0], axis=-1)))


@pytest.mark.parametrize("which", ["fft", "fft2", "rfft", "irfft", "view_as_complex", "stft"])
def test_keras_ops_fft(target, which):
    model, x = _Spectrum(which), seeded((2, 16))
    want = [np.asarray(y) for y in keras.tree.flatten(model(x))]
    graph = validate(lower_keras_subclassed(model, [x]))
    env = run_reference(graph, [x])
    compare_outputs(target, graph, want, [env[v] for v in graph.outputs], 1e-4, 1e-4, "keras (reference)")
    got, _ = emit_and_run(graph, [x], target)
    compare_outputs(target, graph, want, got, 1e-4, 1e-4, "keras")


def _functional(which):
    """A functional Keras model calling keras.ops FFTs (imported by ops/fft/from_keras_ops.py)."""
    ops, x = keras.ops, keras.Input((16,))
    if which == "rfft-irfft":
        re, im = ops.rfft(x)
        return keras.Model(x, [re, im, ops.irfft((re, im), 16), ops.irfft((re, im), 12)])
    if which == "rfft-length":
        return keras.Model(x, list(ops.rfft(x, fft_length=10)) + list(ops.rfft(x, fft_length=20)))
    pair = (x, ops.flip(x, axis=-1))
    if which == "fft":
        return keras.Model(x, list(ops.fft(pair)))
    if which == "fft2":
        grid = keras.Input((4, 4))
        return keras.Model(grid, list(ops.fft2((grid, grid * 2.0))) + list(ops.ifft2((grid, grid))))
    z = ops.view_as_complex(ops.stack(pair, axis=-1))
    return keras.Model(x, [ops.real(z), ops.imag(ops.conj(z)), ops.angle(z), ops.view_as_real(z)])


@pytest.mark.parametrize("which", ["rfft-irfft", "rfft-length", "fft", "fft2", "views"])
def test_keras_functional_fft(target, which):
    shape = (2, 4, 4) if which == "fft2" else (2, 16)
    check_keras_model(_functional(which), seeded(shape), target=target, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("n, form", [(16, "rdft16_cos"), (DFT_MAX + 2, "torch.fft.rfftn(")])
def test_torch_xla_writes_short_transforms_as_matmuls(n, form):
    # Note [DFT as matmul]: PyTorch/XLA cannot lower torch.fft; axes up to DFT_MAX become cos/sin matmuls
    graph = lower_exported(export_module(Wrap(lambda x: torch.fft.irfft(torch.fft.rfft(x), n=n)), [torch.randn(2, n)]))
    with tempfile.TemporaryDirectory() as tmp:
        code = emit_torch(run_passes(graph, "torch-xla"), tmp)["code"].read_text()
    assert form in code and ("torch.fft" in code) == (n > DFT_MAX)


def test_irfft_tables_ignore_the_imaginary_dc_and_nyquist_bins():
    cos, sin = irfft_tables(5, 8)
    spectrum = np.fft.rfft(np.arange(8.0)) + 1j * np.array([3.0, 0, 0, 0, 5.0])  # imag parts torch ignores
    np.testing.assert_allclose((spectrum.real @ cos - spectrum.imag @ sin) / 8, np.arange(8.0), atol=1e-4)
    assert not sin[0].any() and np.allclose(sin[4], 0, atol=1e-5)
    cos, sin = dft_tables(4, -1)
    np.testing.assert_allclose(cos[0] + 1j * sin[0], np.fft.fft([1, 0, 0, 0]), atol=1e-6)
