"""Progress counts inside ONNX and jaxpr lowering, and ``portx verify``'s display (issue 19).

A conversion given a reporter sees per-node counts while the ONNX frontend walks its nodes and while the jaxpr
frontend (a subclassed Keras model) walks its equations, as the torch frontend already showed. ``portx verify``
off a terminal prints one plain line per stage on stderr, and with ``--json`` its stdout stays one JSON document.
"""
import json
import re

import keras
import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import portx
from portx.cli import main
from portx.progress import Reporter
from tests.support.paths import SAMPLE


class Recording(Reporter):
    """Every stage start and step, in order: ``(stage, done, total, what)``."""

    def __init__(self):
        self.stage, self.steps = None, []

    def start(self, stage):
        self.stage = stage

    def step(self, done, total=None, what=""):
        self.steps.append((self.stage, done, total, what))


def _counts(recording, stage):
    return [(done, total, what) for s, done, total, what in recording.steps if s == stage]


def _onnx_mlp(path):
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"), helper.make_node("Relu", ["h"], ["a"], name="act"),
             helper.make_node("MatMul", ["a", "w2"], ["m"], name="fc2"), helper.make_node("Add", ["m", "b"], ["y"], name="bias")]
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w1", (4, 8)), ("w2", (8, 3)), ("b", (3,)))]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_onnx_lowering_reports_each_node(tmp_path):
    seen = Recording()
    portx.convert(_onnx_mlp(tmp_path / "mlp.onnx"), to="keras-jax", out=tmp_path / "out", verify=False, progress=seen)
    lowering = _counts(seen, "lower")
    assert [(d, t) for d, t, _ in lowering] == [(0, 4), (1, 4), (2, 4), (3, 4)], lowering
    assert [w for _, _, w in lowering] == ["fc1 (MatMul)", "act (Relu)", "fc2 (MatMul)", "bias (Add)"]


class _Block(keras.Model):
    def __init__(self):
        super().__init__(name="block")
        self.fc1, self.fc2 = keras.layers.Dense(8, name="fc1"), keras.layers.Dense(3, name="fc2")

    def call(self, x):
        return self.fc2(keras.ops.relu(self.fc1(x)))


def test_jaxpr_lowering_of_a_subclassed_keras_model_reports_each_equation(tmp_path):
    keras.utils.set_random_seed(0)
    model, x = _Block(), np.random.default_rng(0).normal(size=(2, 4)).astype("float32")
    model(x)
    seen = Recording()
    portx.convert(model, example_inputs=(x,), to="torch-xla", out=tmp_path / "out", verify=False, progress=seen)
    lowering = _counts(seen, "lower")
    total = lowering[0][1]
    assert total >= 4 and [d for d, _, _ in lowering] == list(range(total)), lowering  # one step per equation
    assert {t for _, t, _ in lowering} == {total}
    assert any(re.fullmatch(r"fc1\S* \(dot_general\)", w) for _, _, w in lowering), lowering


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """OUT of the bundled sample, converted without verification (``portx verify`` checks it)."""
    out = tmp_path_factory.mktemp("verify") / "out"
    assert CliRunner().invoke(main, ["convert", str(SAMPLE), "-o", str(out), "--no-verify"]).exit_code == 0
    return out


def test_verify_off_a_terminal_prints_plain_stage_lines(converted):
    run = CliRunner().invoke(main, ["verify", str(SAMPLE), str(converted), "--samples", "2"])
    assert run.exit_code == 0, run.output
    lines = run.stderr.splitlines()
    for stage in ("load", "load-out", "pair", "samples"):
        assert any(re.fullmatch(rf"  {stage} +\d+\.\d\ds", ln) for ln in lines), (stage, lines)
    assert "\x1b" not in run.output and "\r" not in run.output  # no control characters in a CI log
    assert "verified" in run.stdout


def test_verify_json_keeps_stdout_one_json_document(converted):
    run = CliRunner().invoke(main, ["verify", str(SAMPLE), str(converted), "--json", "--trace"])
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)  # the stage lines went to stderr
    assert report["passed"] is True and report["trace"]
    assert re.search(r"^  trace +\d+\.\d\ds$", run.stderr, re.M) and "\x1b" not in run.stderr
