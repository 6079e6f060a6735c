"""Sorting and running ops: torch programs (both targets) and keras.ops / JAX programs through the JAX frontend.

Each torch case lowers through the real torch frontend, compares the NumPy references with torch and each
target's emitted model with torch (harness.check_torch_op). The Keras cases are subclassed models whose
``call`` uses keras.ops or jax.lax directly, traced to a jaxpr and converted (the way ``keras.ops.argmax``,
``sort``, ``top_k`` and ``cumprod`` reach portx).
"""
import jax
import keras
import numpy as np
import pytest
import torch
from keras import ops

from portx.frontends.keras.subclassed import lower_keras_subclassed
from portx.errors import UnsupportedOps
from portx.ir import REGISTRY, validate
from portx.ops import sort
from portx.verification.compare import run_reference
from tests.support.harness import check_torch_op, compare_outputs, emit_and_run, lower_torch
from tests.support.keras_harness import check_keras_model, seeded

SHAPE = (2, 3, 5)


def _x(kind="f", shape=SHAPE, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if kind == "ties":  # few distinct values: stability and tie order matter
        return torch.randint(0, 3, shape, generator=gen).float()
    if kind == "i":
        return torch.randint(-4, 5, shape, generator=gen)
    if kind == "nan":  # some NaNs, and one row of NaNs only
        x = torch.randn(shape, generator=gen)
        x[0, 1, 2], x[1, 0, 1:3], x[1, 2, :] = float("nan"), float("nan"), float("nan")
        return x
    return torch.randn(shape, generator=gen)


BOUNDS = torch.tensor([-1.0, -0.25, 0.0, 0.5, 1.0])

CASES = [
    pytest.param(lambda x: torch.sort(x), ["f"], ["sort"], id="sort"),
    pytest.param(lambda x: torch.sort(x, dim=1, descending=True), ["f"], ["sort"], id="sort-descending"),
    pytest.param(lambda x: torch.sort(x, dim=-1, stable=True), ["ties"], ["sort"], id="sort-stable-ties"),
    pytest.param(lambda x: torch.sort(x, dim=0, descending=True, stable=True), ["ties"], ["sort"],
                 id="sort-descending-stable-ties"),
    pytest.param(lambda x: torch.sort(x, dim=2), ["i"], ["sort"], id="sort-int"),
    pytest.param(lambda x: torch.argsort(x, dim=1), ["f"], ["sort"], id="argsort"),
    pytest.param(lambda x: torch.argsort(x, dim=-1, descending=True, stable=True), ["ties"], ["sort"],
                 id="argsort-descending-ties"),
    pytest.param(torch.msort, ["f"], ["sort"], id="msort"),
    pytest.param(lambda x: torch.topk(x, 2), ["f"], ["topk"], id="topk"),
    pytest.param(lambda x: torch.topk(x, 3, dim=1, largest=False), ["f"], ["topk"], id="topk-smallest-axis1"),
    pytest.param(lambda x: torch.topk(x, 1, dim=0), ["f"], ["topk"], id="topk-axis0"),
    pytest.param(lambda x: torch.median(x, dim=-1), ["f"], ["sort", "select"], id="median-dim"),
    pytest.param(lambda x: torch.median(x, dim=1, keepdim=True).values, ["f"], ["sort"], id="median-keepdim"),
    pytest.param(torch.median, ["f"], ["sort"], id="median-all"),
    pytest.param(lambda x: torch.kthvalue(x, 2, dim=1), ["f"], ["sort"], id="kthvalue"),
    pytest.param(lambda x: torch.nanmedian(x, dim=-1), ["nan"], ["sort", "gather"], id="nanmedian-dim"),
    pytest.param(lambda x: torch.nanmedian(x, 1, keepdim=True).values, ["nan"], ["sort"], id="nanmedian-keepdim"),
    pytest.param(torch.nanmedian, ["nan"], ["sort"], id="nanmedian-all"),
    pytest.param(lambda x: torch.quantile(x, 0.3, dim=-1), ["f"], ["sort"], id="quantile"),
    pytest.param(lambda x: torch.nanquantile(x, 0.7, dim=1), ["f"], ["sort"], id="nanquantile"),
    pytest.param(lambda x: torch.bucketize(x, BOUNDS), ["f"], ["searchsorted"], id="bucketize"),
    pytest.param(lambda x: torch.bucketize(x, BOUNDS, right=True, out_int32=True), ["ties"], ["searchsorted"],
                 id="bucketize-right-int32"),
    pytest.param(lambda x: torch.searchsorted(BOUNDS, x), ["f"], ["searchsorted"], id="searchsorted"),
    pytest.param(lambda x: torch.searchsorted(BOUNDS, x, side="right"), ["ties"], ["searchsorted"],
                 id="searchsorted-right"),
    pytest.param(lambda x: torch.isin(x, torch.tensor([0, 2, 3])), ["i"], ["any"], id="isin-few"),
    pytest.param(lambda x: torch.isin(x, torch.arange(-20, 20, 2)), ["i"], ["sort", "searchsorted"], id="isin-many"),
    pytest.param(lambda x: torch.isin(x, torch.arange(-20, 20, 2), invert=True), ["i"], ["searchsorted"],
                 id="isin-many-invert"),
    pytest.param(lambda x: torch.cumprod(x, 1), ["f"], ["cumprod"], id="cumprod"),
    pytest.param(lambda x: torch.cumprod(x, -1), ["i"], ["cumprod"], id="cumprod-int"),
    pytest.param(lambda x: torch.logcumsumexp(x * 10, 2), ["f"], ["logcumsumexp"], id="logcumsumexp"),
    pytest.param(lambda x: torch.cummax(x, 1), ["f"], ["cummax"], id="cummax"),
    pytest.param(lambda x: torch.cummax(x, -1), ["ties"], ["cummax"], id="cummax-ties"),
    pytest.param(lambda x: torch.cummin(x, 0), ["ties"], ["cummin"], id="cummin-ties"),
    pytest.param(lambda x: torch.cummin(x, 2).values, ["i"], ["cummin"], id="cummin-int-values"),
]


@pytest.mark.parametrize("fn, kinds, ops_", CASES)
def test_sort_case(target, fn, kinds, ops_):
    inputs = [_x(k, seed=i) for i, k in enumerate(kinds)]
    check_torch_op(fn, *inputs, expect_ops=ops_, atol=1e-5, rtol=1e-5, target=target)


def test_every_sort_op_has_a_case():
    covered = {op for row in CASES for op in row.values[2]} | {op for _, ops_ in KERAS_OPS.values() for op in ops_}
    declared = {name for name, op in REGISTRY.items() if op.family == "sort"}
    assert declared <= covered, f"no case for {sorted(declared - covered)}"


def test_sort_reference_keeps_ties_in_input_order():
    x = np.array([[1.0, 0.0, 1.0, np.nan, 0.0]], dtype=np.float32)
    values, idx = sort.SORT.reference_rule(x, axis=1, descending=True, stable=True)
    assert idx.tolist() == [[3, 0, 2, 1, 4]] and np.isnan(values[0, 0])
    assert sort.SORT.reference_rule(x, axis=1, descending=False, stable=True)[1].tolist() == [[1, 4, 0, 2, 3]]


def test_searchsorted_on_a_batch_of_sequences_is_refused():
    with pytest.raises(UnsupportedOps, match="N-D sorted sequence"):
        lower_torch(lambda s, x: torch.searchsorted(s, x), torch.sort(_x())[0], _x(seed=1))


class _Keras(keras.Model):
    """One keras.ops / jax.lax program per case, in a subclassed model (traced through the JAX frontend)."""

    def __init__(self, fn, **kwargs):
        super().__init__(**kwargs)
        self.fn = fn

    def call(self, x):
        return self.fn(x)


#: id: (program, IR ops the graph must hold)
KERAS_OPS = {
    "sort": (lambda x: ops.sort(x, axis=1), ["sort"]),
    "argsort": (lambda x: ops.argsort(x, axis=-1), ["sort"]),
    "top_k": (lambda x: ops.top_k(x, 2), ["topk"]),
    "sort-two-operands": (lambda x: jax.lax.sort((x, x * 2.0), dimension=2, num_keys=1)[1], ["sort", "gather"]),
    "cumprod": (lambda x: ops.cumprod(x, axis=1), ["cumprod"]),
    "cummax": (lambda x: jax.lax.cummax(x, axis=2) + jax.lax.cummax(x, axis=1, reverse=True), ["cummax"]),
    "cummin": (lambda x: jax.lax.cummin(x, axis=2), ["cummin"]),
    "logcumsumexp": (lambda x: jax.lax.cumlogsumexp(x, axis=1), ["logcumsumexp"]),
    "argmax": (lambda x: ops.argmax(x, axis=-1) + ops.argmin(x, axis=1)[:, :1], ["argmax", "bitcast"]),
    "median": (lambda x: ops.median(x, axis=-1), ["sort"]),
}


@pytest.mark.parametrize("name", sorted(KERAS_OPS))
def test_keras_ops_sorting(target, name):
    fn, want_ops = KERAS_OPS[name]
    model, x = _Keras(fn), seeded((2, 3, 5))
    want = [np.asarray(y) for y in keras.tree.flatten(model(x))]
    graph = validate(lower_keras_subclassed(model, [x]))
    assert set(want_ops) <= {n.op.name for n in graph.nodes}
    env = run_reference(graph, [x])
    compare_outputs(target, graph, want, [env[v] for v in graph.outputs], 1e-5, 1e-5, "keras (reference)")
    got, _ = emit_and_run(graph, [x], target)
    compare_outputs(target, graph, want, got, 1e-5, 1e-5, "keras")


#: id: (keras.ops program in a functional model, IR ops the graph must hold)
FUNCTIONAL = {
    "sort": (lambda x: ops.sort(x, axis=1), ["sort"]),
    "argsort": (lambda x: ops.argsort(x), ["sort"]),
    "top_k": (lambda x: ops.top_k(x, 2)[1], ["topk"]),
    "cumprod": (lambda x: ops.cumprod(x, axis=1), ["cumprod"]),
    "searchsorted": (lambda x: ops.searchsorted(ops.convert_to_tensor([-1.0, 0.0, 1.0]), x, side="right"),
                     ["searchsorted"]),
    "median-even": (lambda x: ops.median(x, axis=-1, keepdims=True), ["sort", "slice"]),
    "median-odd": (lambda x: ops.median(x, axis=1), ["sort", "select"]),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_keras_ops_sorting(target, name):
    fn, want_ops = FUNCTIONAL[name]
    x = keras.Input((3, 4))
    graph = check_keras_model(keras.Model(x, fn(x)), seeded((2, 3, 4)), target=target)
    assert set(want_ops) <= {n.op.name for n in graph.nodes}
