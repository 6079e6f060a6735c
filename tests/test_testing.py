"""``portx.testing``: assert_equivalent on modules, files and live models, and the pytest plugin's fixture."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from torch import nn

import portx
from portx import BadInput
from portx.targets.codegen import import_by_path
from portx.testing import assert_equivalent
from tests.support.paths import SAMPLE


def _net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)).eval()


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    net, x = _net(), torch.randn(2, 6)
    out = tmp_path_factory.mktemp("testing") / "out"
    portx.convert(net, example_inputs=(x,), out=out)
    return net, x, out


def _scaled_copy(out, dest, layer_name, factor):
    """``out`` with one layer's kernel scaled (a stand-in for a wrong conversion); returns the live model too."""
    shutil.copytree(out, dest)
    model = import_by_path(dest / "model.py").load_model()
    layer = model.get_layer(layer_name)
    weights = layer.get_weights()
    layer.set_weights([weights[0] * factor] + weights[1:])
    model.save_weights(dest / "model.weights.json", max_shard_size=2)
    return model


def test_module_against_folder_model_py_and_live_model(converted):
    net, x, out = converted
    report = assert_equivalent(net, out, example_inputs=(x,), samples=3, seed=2)
    assert [s["seed"] for s in report["samples"]] == [2, 3, 4]
    assert_equivalent(net, out / "model.py", example_inputs=(x,))
    assert_equivalent(net, import_by_path(out / "model.py").load_model(), example_inputs=(x,))


def test_explicit_inputs_arrays_or_tensors(converted):
    net, x, out = converted
    report = assert_equivalent(net, out, [np.ones((2, 6), np.float32)])
    assert report["samples"][0]["seed"] is None
    assert_equivalent(net, out, [torch.randn(2, 6, requires_grad=True)])
    assert_equivalent(net, out, [np.ones((3, 6), np.float32)])  # the batch is free: any batch compares
    with pytest.raises(BadInput, match="could not trace Sequential"):
        assert_equivalent(net, out, [np.ones((3, 5), np.float32)])  # a live module is traced at these shapes


def test_mismatch_names_outputs_and_first_diverging_layer(converted, tmp_path):
    net, x, out = converted
    live = _scaled_copy(out, tmp_path / "bad", "linear_0", 1.1)
    for target in (tmp_path / "bad", live):  # from files via model.py; live via layer names
        with pytest.raises(AssertionError) as info:
            assert_equivalent(net, target, example_inputs=(x,))
        text = str(info.value)
        assert "output linear_1: max abs" in text and "DIFFERS" in text
        assert "first diverging layer (seed 0): 0 (linear) %linear" in text


def test_tolerance_decides(converted, tmp_path):
    net, x, out = converted
    _scaled_copy(out, tmp_path / "bad", "linear_2", 1.0001)
    with pytest.raises(AssertionError):
        assert_equivalent(net, tmp_path / "bad", example_inputs=(x,))
    assert_equivalent(net, tmp_path / "bad", example_inputs=(x,), atol=1e-2)


def test_file_source_and_wrong_model(converted, tmp_path):
    net, x, out = converted
    with pytest.raises(AssertionError, match=r"takes inputs of shapes \[\(None, 6\)\], the source \[\(\d, 3, 32, 32\)\]"):
        assert_equivalent(SAMPLE, out)
    with pytest.raises(BadInput, match="not a converted model"):
        assert_equivalent(net, object(), example_inputs=(x,))


PLUGIN_TEST = '''
import warnings

import torch
from torch import nn

import portx
from portx import Checks


def test_fixture_checks_a_conversion(portx_equivalence, tmp_path, request):
    assert request.config.getoption("portx_atol") == 0.5
    torch.manual_seed(0)
    net, x = nn.Sequential(nn.Linear(4, 2), nn.Tanh()).eval(), torch.randn(1, 4)
    portx.convert(net, example_inputs=(x,), out=tmp_path / "out")
    with warnings.catch_warnings(record=True) as seen:  # the documented call: no deprecated keyword
        warnings.simplefilter("always")
        report = portx_equivalence(net, tmp_path / "out", example_inputs=(x,), checks=Checks(samples=2))
    assert len(report["samples"]) == 2
    assert not [w for w in seen if w.category is DeprecationWarning and w.filename == __file__], seen
    with torch.no_grad():
        net[0].weight.add_(0.25)  # now the conversion is stale: within atol 0.5, not within 1e-6
    portx_equivalence(net, tmp_path / "out", example_inputs=(x,), checks=Checks(samples=2))
    portx_equivalence(net, tmp_path / "out", example_inputs=(x,), samples=2)  # the flat keyword still works
    try:
        portx_equivalence(net, tmp_path / "out", example_inputs=(x,), checks=Checks(atol=1e-6, rtol=0.0))
    except AssertionError as exc:
        assert "first diverging layer (seed 0): 0 (linear)" in str(exc)
    else:
        raise RuntimeError("a stale conversion passed")
'''


def test_pytest_plugin_fixture_in_a_fresh_session(tmp_path):
    """The entry point registers the plugin: a suite outside this repo gets the fixture and options."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent(PLUGIN_TEST))
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("PYTEST_ADDOPTS", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--portx-atol", "0.5",
                          "test_user.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 passed" in run.stdout


def test_an_onnx_file_with_named_inputs_takes_explicit_arrays(tmp_path):
    """Before: the arrays became specs named ``input0``, which a file whose input is ``x`` refuses (exit 2)."""
    from tests.frontends.onnx.test_onnx_models import export

    net = _net()
    path = export(net, (torch.randn(2, 6),), tmp_path / "m.onnx", False, {"x": {0: "b"}})
    portx.convert(str(path), out=tmp_path / "o", grad=False)
    report = assert_equivalent(str(path), tmp_path / "o", inputs=(np.random.default_rng(0).standard_normal(
        (3, 6)).astype(np.float32),))
    assert report["passed"] and report["inputs"][0][:2] == ["x", [3, 6]]


@pytest.mark.parametrize("how", ["example", "inputs only"])
def test_a_dynamic_axis_is_free_in_the_check_too(tmp_path, how):
    """Before: ``lower_for`` got no ``--dynamic`` specs, so only the batch was free: arrays at another length than
    the example's were refused ("the source was converted for [(2, 8, 6)]"), or, given as the only inputs, the
    source traced at their length did not match OUT's code. ``shapes=Shapes(dynamic=...)`` passes them through."""
    from portx.options import Checks, Shapes
    from tests.session.test_symbols_read_directly import Sequence

    module, out = Sequence().eval(), tmp_path / "o"
    portx.convert(module, example_inputs=(torch.randn(2, 8, 6),), out=out, grad=False, dynamic=["x:1"])
    x = torch.randn(3, 11, 6, generator=torch.Generator().manual_seed(1))
    example = {"example_inputs": (torch.randn(2, 8, 6),)} if how == "example" else {}
    report = assert_equivalent(module, out, inputs=(x,), shapes=Shapes(dynamic=["x:1"]), checks=Checks(trace=True),
                               **example)
    assert report["passed"] and report["code_matches"], report  # the source's graph is what OUT was emitted from


def test_a_dynamic_axis_is_checked_at_the_sizes_convert_checks(tmp_path):
    """``shapes=Shapes(dynamic=...)`` checks the free dim at convert's sizes too (as ``portx verify --dynamic``), so
    a source that agrees at the example's length only fails, naming the length."""
    from portx.options import Checks, Output, Shapes
    from tests.verification.test_verify_dynamic import _OtherAtOtherLengths, _Tokens

    x, dynamic = torch.randn(2, 6, 8), Shapes(dynamic=("x:1",))
    portx.convert(_Tokens().eval(), example_inputs=(x,), shapes=dynamic, checks=Checks(grad=False, mesh=None),
                  output=Output(out=tmp_path / "o"))
    report = assert_equivalent(_Tokens().eval(), tmp_path / "o", example_inputs=(x,), shapes=dynamic)
    assert [(c["size"], c["passed"]) for c in report["dynamic"][0]["verified"]] == [(6, True), (9, True)]
    plain = assert_equivalent(_Tokens().eval(), tmp_path / "o", example_inputs=(x,))  # x:1 read from OUT
    assert [c["size"] for c in plain["dynamic"][0]["verified"]] == [6, 9]
    with pytest.raises(AssertionError, match=r"free dim x_1 at sizes 6, 9 DIFFERS \("):
        assert_equivalent(_OtherAtOtherLengths().eval(), tmp_path / "o", example_inputs=(x,), shapes=dynamic)
