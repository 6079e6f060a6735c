"""random: torch's samplers (rand_like, randn_like, randint_like, uniform_, normal_, normal, cauchy_, exponential_,
geometric_, log_normal_, bernoulli, multinomial, rrelu in training) -> IR ``random`` / ``multinomial`` -> both
targets. Random numbers cannot match torch's, so each case checks shape, dtype and the distribution (support and
a loose moment) on torch itself, on the IR's NumPy reference and on each target's emitted model; the emitted
Keras model saves and reloads, draws fresh numbers per call, and convert's own verification checks random outputs
for shape, dtype and range with a note naming the random op."""
import os
import tempfile

import keras
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from portx.api import convert
from portx.ir import Node, TensorType, Value
from portx.ops.random import MULTINOMIAL, RANDOM, RANDOM_OPS, support_problem
from portx.targets.codegen import import_by_path
from portx.targets.keras_jax.emitter import emit_keras
from portx.verification.compare import compare_random, run_reference
from tests.support.harness import Wrap, emit_and_run, lower_torch

SHAPE = (64, 32)  # 2,048 draws: a mean is within 0.1 of its expectation at > 4 sigma for these cases


def _moments(lo=-np.inf, hi=np.inf, mean=None, std=None, integers=False, tol=0.1):
    def check(x, y):
        y = np.asarray(y, np.float64)
        assert np.all((y >= lo) & (y <= hi)), (y.min(), y.max())
        assert not integers or np.all(y == np.round(y))
        assert mean is None or abs(y.mean() - mean) < tol, y.mean()
        assert std is None or abs(y.std() - std) < tol, y.std()
    return check


def _median(value, tol=0.15):
    def check(x, y):
        assert abs(np.median(y) - value) < tol, np.median(y)
    return check


def _distinct_ids(n, count):
    def check(x, y):
        assert y.shape == (SHAPE[0], count) and y.dtype.kind == "i" and y.min() >= 0 and y.max() < n
        assert all(len(set(row)) == count for row in y.tolist())
    return check


def _rrelu_slopes(lower, upper):
    def check(x, y):
        pos, neg = x >= 0, x < 0
        np.testing.assert_array_equal(y[pos], x[pos])
        slope = y[neg] / x[neg]
        assert np.all((slope >= lower - 1e-6) & (slope <= upper + 1e-6)) and slope.std() > 0.01
    return check


# (function of x, float32[64x32] ~ N(0, 1); check(x, y) on numpy arrays)
CASES = [
    pytest.param(torch.rand_like, _moments(0, 1, mean=0.5), id="rand_like"),
    pytest.param(torch.randn_like, _moments(mean=0.0, std=1.0), id="randn_like"),
    pytest.param(lambda x: torch.randint_like(x, 3, 9), _moments(3, 8, mean=5.5, integers=True, tol=0.2),
                 id="randint_like"),
    pytest.param(lambda x: (x * 1).uniform_(-2.0, 3.0), _moments(-2, 3, mean=0.5, tol=0.2), id="uniform_"),
    pytest.param(lambda x: (x * 1).normal_(2.0, 0.5), _moments(mean=2.0, std=0.5), id="normal_"),
    pytest.param(lambda x: x.normal_(0.0, 1.0), _moments(mean=0.0, std=1.0), id="normal_-on-the-input"),  # one output
    pytest.param(lambda x: torch.normal(x, 0.5) - x, _moments(mean=0.0, std=0.5), id="normal-tensor-mean"),
    pytest.param(lambda x: (x * 1).cauchy_(1.0, 0.5), _median(1.0), id="cauchy_"),
    pytest.param(lambda x: (x * 1).exponential_(2.0), _moments(0, mean=0.5), id="exponential_"),
    pytest.param(lambda x: (x * 1).geometric_(0.25), _moments(1, mean=4.0, integers=True, tol=0.4), id="geometric_"),
    pytest.param(lambda x: (x * 1).log_normal_(0.0, 0.25), _median(1.0), id="log_normal_"),
    pytest.param(lambda x: torch.bernoulli(x * 0 + 0.3), _moments(0, 1, mean=0.3, integers=True), id="bernoulli"),
    pytest.param(lambda x: torch.multinomial(x[:, :10].softmax(-1), 4), _distinct_ids(10, 4), id="multinomial"),
    pytest.param(lambda x: torch.multinomial(x[:, :5].softmax(-1), 12, replacement=True),
                 _moments(0, 4, integers=True), id="multinomial-replacement"),
    pytest.param(lambda x: F.rrelu(x, 0.1, 0.3, training=True), _rrelu_slopes(0.1, 0.3), id="rrelu-training"),
]


@pytest.mark.parametrize("fn, check", CASES)
def test_random_case(target, fn, check):
    torch.manual_seed(0)
    graph, arrays, expected = lower_torch(Wrap(fn), torch.randn(SHAPE))
    assert any(n.op in RANDOM_OPS for n in graph.nodes) and len(graph.outputs) == 1, [n.op.name for n in graph.nodes]
    check(arrays[0], expected[0])  # the check itself holds for torch's draws
    reference = run_reference(graph, arrays)[graph.outputs[0]]
    assert reference.shape == expected[0].shape and reference.dtype.kind == expected[0].dtype.kind
    check(arrays[0], reference)
    got, _ = emit_and_run(graph, arrays, target)
    assert got[0].shape == expected[0].shape and got[0].dtype.kind == expected[0].dtype.kind, (got[0].dtype,)
    check(arrays[0], got[0])


def test_rrelu_in_eval_mode_is_deterministic(target):
    graph, arrays, expected = lower_torch(Wrap(lambda x: F.rrelu(x, 0.1, 0.3)), torch.randn(4, 5))
    assert not any(n.op in RANDOM_OPS for n in graph.nodes)
    got, _ = emit_and_run(graph, arrays, target)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6, atol=1e-7)


def test_emitted_keras_model_draws_fresh_numbers_saves_and_reloads():
    graph, arrays, _ = lower_torch(Wrap(lambda x: torch.randn_like(x) * 2 + x), torch.randn(3, 4))
    with tempfile.TemporaryDirectory() as tmp:
        emit_keras(graph, tmp)
        model = import_by_path(os.path.join(tmp, "model.py")).load_model()
        first, second = np.asarray(model(arrays[0])), np.asarray(model(arrays[0]))
        assert first.shape == (3, 4) and not np.allclose(first, second)  # fresh numbers per call
        path = os.path.join(tmp, "saved.keras")
        model.save(path)
        reloaded = keras.saving.load_model(path)
        again = np.asarray(reloaded(arrays[0]))
        assert again.shape == (3, 4) and again.dtype == np.float32 and np.isfinite(again).all()
        assert [type(layer).__name__ for layer in reloaded.layers].count("RandomSample") == 1


def test_convert_verifies_random_outputs_by_shape_dtype_and_range(target):
    module = Wrap(lambda x: (torch.rand_like(x) * 4 - 2, torch.relu(x), F.rrelu(x, training=True)))
    with tempfile.TemporaryDirectory() as tmp:
        result = convert(module, to=target, out=os.path.join(tmp, "out"), example_inputs=(torch.randn(2, 3),),
                         grad=True)
    ver = result.report["verification"]
    assert ver["passed"] is True and result.report["gradients"]["passed"] is True  # random outputs left out
    rows = {row["name"]: row for row in ver["outputs"]}
    assert sum("random" in row for row in rows.values()) == 2  # relu(x) is still compared by value
    assert any("random op random (uniform)" in note for note in ver["notes"]), ver["notes"]


def _node(op, attrs, shape=(8,), dtype="float32"):
    return Node(op, (Value("x", TensorType(shape, "float32")),), (Value("y", TensorType((8,), dtype)),), attrs, "s")


def test_support_check_rejects_draws_outside_the_distribution():
    uniform = _node(RANDOM, {"distribution": "uniform", "params": (0.0, 1.0), "dtype": "float32", "seed": 0})
    assert support_problem(uniform, np.linspace(0, 1, 8)) == ""
    assert "outside" in support_problem(uniform, np.linspace(0, 2, 8))
    geometric = _node(RANDOM, {"distribution": "geometric", "params": (0.5,), "dtype": "float32", "seed": 0})
    assert "outside" in support_problem(geometric, np.full(8, 0.5))
    ids = _node(MULTINOMIAL, {"num_samples": 8, "replacement": True, "dtype": "int64", "seed": 0}, (3,), "int64")
    assert "outside" in support_problem(ids, np.arange(8))
    row = compare_random(np.zeros(8, np.float32), np.full(8, 2.0, np.float32), uniform, True)
    assert not row["passed"] and "random" in row
    assert not compare_random(np.zeros(8), np.zeros(4), uniform, True)["passed"]
    assert compare_random(np.zeros(8, np.float32), np.full(8, 0.5, np.float32), uniform, True)["passed"]


def test_reference_is_seeded_and_each_seed_draws_its_own_numbers():
    x = np.zeros((4, 5), np.float32)
    attrs = {"distribution": "normal", "params": (0.0, 1.0), "dtype": "float32"}
    a, b = (RANDOM.reference_rule(x, **attrs, seed=s) for s in (1, 1))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, RANDOM.reference_rule(x, **attrs, seed=2))
    with pytest.raises(ValueError, match="unknown distribution"):
        RANDOM.infer_rule(TensorType((2,), "float32"), distribution="gamma", params=(), dtype="float32", seed=0)
