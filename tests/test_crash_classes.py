"""The crash classes of issue 18, each through ``portx.convert`` with verification on, on both targets.

Constant-only outputs (and models with no inputs), 0-d outputs and inputs kept 0-d, unbatched convolutions,
unsigned dtypes, negative pads beyond the axis, verification inputs in the source's domain (random inputs
the source rejects or turns into NaN are replaced, with a note), a subclassed Keras model taking two
positional inputs, and float16 Keras layers into torch.
"""
import keras
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import portx
from portx.targets import find_target
from tests.support.harness import TARGETS, Wrap


def _convert(fn, inputs, target, tmp_path, **kwargs):
    result = portx.convert(Wrap(fn).eval(), example_inputs=inputs, to=target, out=tmp_path / "o", grad=False,
                           **kwargs)
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    return result


def _outputs(fn, inputs):
    with torch.no_grad():
        out = fn(*inputs)
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


torch.manual_seed(0)
_X = torch.randn(2, 3)

CONSTANT_CASES = {
    "arange": (lambda x: torch.arange(5), (_X,)),
    "zeros": (lambda x: torch.zeros(3), (_X,)),
    "full": (lambda x: torch.full((2, 2), 1.5), (_X,)),
    "hann_window": (lambda x: torch.signal.windows.hann(8), (_X,)),
    "eye_beside_computed": (lambda x: (x * 2, torch.eye(3)), (_X,)),
    "no_inputs_linspace": (lambda: torch.linspace(0, 1, 5), ()),
    "no_inputs_two": (lambda: (torch.arange(4.0) * 2, torch.signal.windows.hann(6)), ()),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CONSTANT_CASES))
def test_constant_outputs_convert_and_match(case, target, tmp_path):
    fn, inputs = CONSTANT_CASES[case]
    result = _convert(fn, inputs, target, tmp_path)
    got = find_target(target).run(result.model, [x.numpy() for x in inputs])
    for want, have in zip(_outputs(fn, inputs), got):
        np.testing.assert_allclose(np.asarray(have), want, rtol=1e-6, atol=1e-6)


def test_a_keras_model_with_no_inputs_saves_and_reloads(tmp_path):
    result = _convert(lambda: torch.linspace(0, 1, 5), (), "keras-jax", tmp_path)
    path = tmp_path / "constant.keras"
    result.model.save(path)
    reloaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(reloaded()), np.linspace(0, 1, 5), rtol=1e-6)


def test_a_constant_keras_output_saves_and_reloads(tmp_path):
    x = _X.numpy()
    result = _convert(lambda x: (x * 2, torch.eye(3)), (_X,), "keras-jax", tmp_path)
    path = tmp_path / "eye.keras"
    result.model.save(path)
    doubled, eye = keras.saving.load_model(path)(x)
    np.testing.assert_allclose(np.asarray(eye), np.eye(3))
    np.testing.assert_allclose(np.asarray(doubled), x * 2, rtol=1e-6)


ZERO_D_CASES = {
    "sum": (lambda x: x.sum(), (_X,)),
    "mean_of_two": (lambda x, y: (x - y).pow(2).mean(), (_X, torch.randn(2, 3))),
    "scalar_input": (lambda s: s * 2 + 1, (torch.tensor(3.0),)),
    "scalar_beside_batched": (lambda x, s: x * s, (_X, torch.tensor(3.0))),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(ZERO_D_CASES))
def test_0d_outputs_and_inputs_stay_0d(case, target, tmp_path):
    fn, inputs = ZERO_D_CASES[case]
    result = _convert(fn, inputs, target, tmp_path, static_batch=None if inputs[0].dim() else 1)
    got = find_target(target).run(result.model, [x.numpy() for x in inputs])
    for want, have in zip(_outputs(fn, inputs), got):
        assert np.shape(have) == want.shape
        np.testing.assert_allclose(np.asarray(have), want, rtol=1e-5, atol=1e-5)


CONV_CASES = {
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), (torch.randn(3, 10), torch.randn(4, 3, 3))),
    "conv2d": (lambda x, w: F.conv2d(x, w, stride=2), (torch.randn(3, 8, 8), torch.randn(4, 3, 3, 3))),
    "conv3d": (lambda x, w: F.conv3d(x, w, padding="same"), (torch.randn(2, 4, 5, 5), torch.randn(3, 2, 3, 3, 3))),
    "conv_transpose1d": (lambda x, w: F.conv_transpose1d(x, w), (torch.randn(3, 10), torch.randn(3, 4, 3))),
    "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w, stride=2), (torch.randn(3, 5, 5),
                                                                            torch.randn(3, 4, 3, 3))),
    "conv_transpose3d": (lambda x, w: F.conv_transpose3d(x, w), (torch.randn(2, 3, 4, 4),
                                                                 torch.randn(2, 3, 2, 2, 2))),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_unbatched_convolutions(case, target, tmp_path):
    fn, inputs = CONV_CASES[case]
    result = _convert(fn, inputs, target, tmp_path)
    assert result.report["outputs"][0][1] == list(_outputs(fn, inputs)[0].shape)


UNSIGNED_CASES = {
    "cast_to_uint16": (lambda x: x.to(torch.uint16), (torch.rand(2, 3) * 100,)),
    "cast_to_uint32": (lambda x: x.to(torch.uint32), (torch.rand(2, 3) * 100,)),
    "cast_to_uint64": (lambda x: x.to(torch.uint64), (torch.rand(2, 3) * 100,)),
    "uint16_input": (lambda x, u: x * u.to(torch.float32), (_X, torch.arange(6).to(torch.uint16).reshape(2, 3))),
    "uint64_input": (lambda x, u: x * u.to(torch.float32), (_X, torch.arange(6).to(torch.uint64).reshape(2, 3))),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(UNSIGNED_CASES))
def test_unsigned_dtypes(case, target, tmp_path):
    fn, inputs = UNSIGNED_CASES[case]
    result = _convert(fn, inputs, target, tmp_path)
    got = find_target(target).run(result.model, [x.numpy() for x in inputs])
    want = _outputs(fn, inputs)[0]
    assert np.asarray(got[0]).dtype.kind == want.dtype.kind
    np.testing.assert_allclose(np.asarray(got[0]).astype(np.float64), want.astype(np.float64), rtol=1e-6)


PAD_CASES = {
    "replicate": ((-1, 2), "replicate"),
    "replicate_beyond_the_axis": ((-4, 5), "replicate"),
    "replicate_beyond_the_end": ((3, -4), "replicate"),
    "constant": ((-1, 2), "constant"),
    "constant_crop_both_ends": ((-1, -1), "constant"),
    "reflect": ((-1, 2), "reflect"),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(PAD_CASES))
def test_negative_pads(case, target, tmp_path):
    pads, mode = PAD_CASES[case]
    fn, inputs = (lambda x: F.pad(x, pads, mode=mode)), (torch.randn(2, 3, 4),)
    result = _convert(fn, inputs, target, tmp_path)
    got = find_target(target).run(result.model, [inputs[0].numpy()])
    np.testing.assert_allclose(np.asarray(got[0]), _outputs(fn, inputs)[0], rtol=1e-6)


class _NonNegative(torch.nn.Module):
    """Raises in eager on a negative input (as a domain check does); torch.export traces the arithmetic."""

    def forward(self, x):
        if not torch.compiler.is_exporting() and bool((x < 0).any()):
            raise ValueError("negative input")
        return x.sqrt() * 2


DOMAIN_CASES = {
    "log_of_positive": (lambda x: torch.log(x), (torch.rand(2, 3) + 0.5,)),
    "sqrt_of_x_minus_1": (lambda x: torch.sqrt(x - 1), (torch.rand(2, 3) + 1.5,)),
    "raises_on_negative": (_NonNegative(), (torch.rand(2, 3) + 0.1,)),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(DOMAIN_CASES))
def test_verification_inputs_stay_in_the_sources_domain(case, target, tmp_path):
    fn, inputs = DOMAIN_CASES[case]
    result = _convert(fn, inputs, target, tmp_path)
    ver = result.report["verification"]
    assert ver["notes"] and "verification inputs (random) replaced" in ver["notes"][0]
    assert [b["on"] for b in ver["batches"]][-1] == "example" and all(b["passed"] for b in ver["batches"])


def test_verification_always_includes_the_example_inputs(tmp_path):
    result = _convert(lambda x: x * 3, (_X,), "keras-jax", tmp_path)
    assert [b["on"] for b in result.report["verification"]["batches"]] == ["random", "example"]
    assert result.report["verification"]["notes"] == []


def test_a_source_that_runs_on_no_input_skips_verification_with_a_note(tmp_path):
    fn = Wrap(lambda x: x.to(torch.uint32) + 1)  # eager torch has no uint32 add: the source cannot run at all
    result = portx.convert(fn, example_inputs=(torch.rand(2, 3) * 9,), to="torch-xla", out=tmp_path / "o", grad=False)
    ver = result.report["verification"]
    assert ver["passed"] is None and ver["skipped"] and "verification skipped" in ver["notes"][-1]


class _TwoInputs(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(4)

    def call(self, x, y):
        return self.dense(x) * y


class _ListInput(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(4)

    def call(self, inputs):
        x, y = inputs
        return self.dense(x) + y


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model_class", [_TwoInputs, _ListInput])
def test_subclassed_keras_models_with_two_inputs(model_class, target, tmp_path):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((2, 4)).astype("float32")
    result = portx.convert(model_class(), example_inputs=(x, y), to=target, out=tmp_path / "o")
    assert result.report["verification"]["passed"] is True


@pytest.mark.parametrize("layer", ["dense", "mha"])
def test_float16_keras_layers_convert_to_torch(layer, tmp_path):
    keras.utils.set_random_seed(0)
    inp = keras.Input((5, 8))
    out = (keras.layers.Dense(4, dtype="float16")(inp) if layer == "dense"
           else keras.layers.MultiHeadAttention(2, 4, dtype="float16")(inp, inp))
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype("float32")
    result = portx.convert(keras.Model(inp, out), example_inputs=(x,), to="torch-xla", out=tmp_path / "o")
    assert result.report["verification"]["passed"] is True
    assert any("computes in float16" in w for w in result.report["warnings"])
