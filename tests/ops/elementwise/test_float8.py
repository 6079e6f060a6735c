"""float8 (float8_e4m3fn, float8_e5m2) casts on both targets: torch's fake quantization ``x.to(float8).float() * s``
(torch's saturation included), a float8 buffer, Keras' ``quantize("float8")`` Dense and EinsumDense, NumPy <-> torch
crossings of float8 arrays, the TPU proofs of a cast to float8 and back, and the fnuz formats (torch-xla only)."""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from portx.errors import PortxError  # noqa: E402
from portx.frontends.torch import export_module, lower_exported  # noqa: E402
from portx.ir import validate  # noqa: E402
from portx.passes.pipeline import run_passes  # noqa: E402
from portx.targets.codegen import import_by_path  # noqa: E402
from portx.targets.keras_jax.emitter import emit_keras  # noqa: E402
from portx.targets.keras_jax.tpu import prove_tpu_lowering  # noqa: E402
from portx.weights.tensors import array_of, tensor_of  # noqa: E402
from portx.targets.torch_xla.tpu import prove_torch_tpu_lowering  # noqa: E402
from tests.support.harness import Wrap, check_torch_op, emit_and_load, emit_and_run, lower_torch  # noqa: E402
from tests.support.keras_harness import check_keras_model, seeded  # noqa: E402

FLOAT8 = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
FNUZ = {"float8_e4m3fnuz": torch.float8_e4m3fnuz, "float8_e5m2fnuz": torch.float8_e5m2fnuz}
#: values that round differently in the two formats, subnormals of each, and the largest finite values
VALUES = np.array([[0.0, -0.0, 1.0, 1.0625, -3.3, 0.1, 2.0 ** -9, 2.0 ** -16, 448.0, -57344.0, 300.0, 7.7]],
                  dtype=np.float32)


class FakeQuant(torch.nn.Module):
    """x scaled, rounded to float8 and back: what float8 training recipes do to activations."""

    def __init__(self, dtype, scale=0.5):
        super().__init__()
        self.dtype, self.scale = dtype, scale

    def forward(self, x):
        return x.to(self.dtype).to(torch.float32) * self.scale


@pytest.mark.parametrize("name", sorted(FLOAT8))
def test_torch_fake_quant_matches_torch(target, name):
    x = np.concatenate([VALUES[:, :8], seeded((1, 8)) * 4])  # finite in both formats: overflow is format-defined
    graph = check_torch_op(FakeQuant(FLOAT8[name]), x, target=target, atol=0.0, rtol=0.0, expect_ops=["cast"])
    assert name in {v.type.dtype for n in graph.nodes for v in n.outputs}


@pytest.mark.parametrize("name", sorted(FLOAT8))
def test_torch_overflow_matches_torch(target, name):
    """Past the finite range torch saturates e4m3fn (inf and 1e6 become +-448) and not e5m2 (inf); NaN stays NaN
    (Note [float8 casts] in ops/elementwise/float8.py)."""
    x = np.concatenate([VALUES, [[np.inf, -np.inf, np.nan, 1e6, -465.0, 464.0, 61440.0, 6e4, 0, 0, 0, 0]]])
    graph = check_torch_op(FakeQuant(FLOAT8[name], 1.0), x.astype(np.float32), target=target, atol=0.0, rtol=0.0)
    assert ("minimum" in {n.op.name for n in graph.nodes}) == (name == "float8_e4m3fn")


class Float8Buffer(torch.nn.Module):
    """A float8 buffer read by a concatenation (no cast folds it): a float8 parameter on both targets."""

    def __init__(self, dtype):
        super().__init__()
        self.register_buffer("w", (torch.randn(3, 8, generator=torch.Generator().manual_seed(0)) * 8).to(dtype))
        self.dtype = dtype

    def forward(self, x):
        return torch.cat([x.to(self.dtype), self.w]).to(torch.float32) * 2


@pytest.mark.parametrize("name", sorted(FLOAT8))
def test_float8_buffer_matches_torch(target, name):
    graph = check_torch_op(Float8Buffer(FLOAT8[name]), seeded((2, 8)), target=target, atol=0.0, rtol=0.0)
    assert str(graph.params["w"].dtype) == name
    assert run_passes(graph, target).params["w"].dtype == (name if target == "torch-xla" else "float32")


@pytest.mark.parametrize("name", sorted(FLOAT8))
def test_float8_output_keeps_its_dtype(target, name):
    """A graph whose output is float8 gives float8 on both targets, bit for bit torch's."""
    module, x = Wrap(lambda t: (t * 3).to(FLOAT8[name])), torch.from_numpy(VALUES[:, :8])
    graph = validate(lower_exported(export_module(module, [x])))
    assert graph.outputs[0].type.dtype == name
    got, _ = emit_and_run(graph, [x.numpy()], target)
    assert str(got[0].dtype) == name
    np.testing.assert_array_equal(np.asarray(got[0]).view(np.uint8), array_of(module(x)).view(np.uint8))


@pytest.mark.parametrize("mode", ["dense", "einsum"])
def test_keras_float8_quantized_layer(target, mode):
    keras.utils.set_random_seed(0)
    layer = keras.layers.Dense(4) if mode == "dense" else keras.layers.EinsumDense("abc,cd->abd", (None, 4))
    shape = (8,) if mode == "dense" else (5, 8)
    model = keras.Sequential([keras.Input(shape), layer])
    layer.quantize("float8")
    graph = check_keras_model(model, seeded((2,) + shape), target=target, randomize=False)
    assert "float8_e4m3fn" in {v.type.dtype for n in graph.nodes for v in n.outputs}


def test_keras_cast_overflow_does_not_saturate(target):
    """Keras' (JAX's) cast to float8 does not saturate: past the range e4m3fn is NaN and e5m2 inf, and the torch
    written for it says so on the CPU too, where torch's own e4m3fn cast would give 448."""
    inp = keras.Input((12,))
    outs = [keras.ops.cast(keras.ops.cast(inp * scale, name), "float32")
            for name, scale in (("float8_e4m3fn", 1.0), ("float8_e5m2", 128.0))]
    x = np.concatenate([VALUES, [[464.0, 465.0, -1e4, np.inf, np.nan, 2.0, 448.0, -448.0, 460.0, 0.5, 1e-3, 3.0]]])
    graph = check_keras_model(keras.Model(inp, outs), x.astype(np.float32), target=target, atol=0.0, rtol=0.0,
                              randomize=False)
    assert "minimum" not in {n.op.name for n in graph.nodes}


@pytest.mark.parametrize("name", sorted(FLOAT8))
def test_numpy_torch_crossing_keeps_bits(name):
    array = (VALUES * 0.9).astype(getattr(ml_dtypes, name))
    tensor = tensor_of(array)
    assert tensor.dtype == FLOAT8[name]
    back = array_of(tensor)
    assert str(back.dtype) == name
    np.testing.assert_array_equal(back.view(np.uint8), array.view(np.uint8))


@pytest.mark.parametrize("name", sorted(FLOAT8))
def test_float8_cast_lowers_for_tpu(name, tmp_path):
    """The keras-jax model written for a cast to float8 and back passes the TPU proof (jax.export for platform
    tpu): XLA converts to and from f8E4M3FN and f8E5M2."""
    graph = run_passes(lower_torch(FakeQuant(FLOAT8[name]), torch.from_numpy(seeded((2, 8))))[0], "keras-jax")
    emit_keras(graph, tmp_path)
    proof = prove_tpu_lowering(import_by_path(os.path.join(tmp_path, "model.py")).load_model(), graph)
    assert proof["verdict"] == "ok", proof
    assert proof["ops"].get("convert", 0) >= 2, proof["ops"]


@pytest.mark.parametrize("name", sorted(FLOAT8) + sorted(FNUZ))
def test_torch_xla_float8_cast_lowers_for_tpu(name, tmp_path):
    """The torch-xla model for a cast to float8 and back passes the torchax TPU proof; a fnuz one fails it (torchax
    has no JAX type for torch.float8_*fnuz: op_tables/torch_xla.toml says so)."""
    dtype = {**FLOAT8, **FNUZ}[name]
    graph = run_passes(lower_torch(FakeQuant(dtype), torch.from_numpy(seeded((2, 8))))[0], "torch-xla")
    model, code = emit_and_load(graph, tmp_path)
    assert f"torch.{name}" in code
    proof = prove_torch_tpu_lowering(model, graph)
    if name in FNUZ:
        assert proof["verdict"] == "failed" and f"unknown type: torch.{name}" in proof["problems"][0], proof
        return
    assert proof["verdict"] == "ok", proof
    assert proof["ops"].get("convert", 0) >= 2, proof["ops"]


@pytest.mark.parametrize("name", sorted(FNUZ))
def test_fnuz_on_torch_xla_and_refused_on_keras(target, name):
    """fnuz casts are torch-xla's (torch.float8_*fnuz); Keras has no such dtype, so keras-jax refuses them by name."""
    if target == "torch-xla":
        check_torch_op(FakeQuant(FNUZ[name]), seeded((2, 8)) * 4, target=target, atol=0.0, rtol=0.0)
        return
    with pytest.raises(PortxError, match=f"Keras 3 has no {name} dtype"):
        check_torch_op(FakeQuant(FNUZ[name]), seeded((2, 8)) * 4, target=target)
