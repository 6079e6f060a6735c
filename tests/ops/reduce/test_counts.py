"""Counting reductions built from comparisons (mode, histc, histogram, histogramdd, segment_reduce): torch -> IR
-> NumPy reference and both targets' emitted models."""
import pytest
import torch

from tests.support.harness import Wrap, check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}


def _small_ints(*shape):
    """Floats with many ties (a mode worth finding)."""
    return lambda: torch.randint(0, 4, shape).float()


class _Segments(torch.nn.Module):
    """segment_reduce over constant lengths (or offsets), held as a buffer as in a real model."""

    def __init__(self, reduce, table, kind="lengths", axis=0, initial=None):
        super().__init__()
        self.register_buffer("table", torch.tensor(table))
        self.reduce, self.kind, self.axis, self.initial = reduce, kind, axis, initial

    def forward(self, x):
        return torch.segment_reduce(x, self.reduce, **{self.kind: self.table}, axis=self.axis, initial=self.initial)


def _dd(x, bins, **kwargs):
    """torch.histogramdd's (hist, [edges per dimension]) as one flat tuple."""
    hist, edges = torch.histogramdd(x, bins, **kwargs)
    return (hist, *edges)


def _edges(x):
    return torch.histogram(x, torch.tensor([-2.0, -0.5, 0.0, 0.3, 2.5]))


# (function or module, inputs: shapes of normal floats or tensor factories, IR ops expected)
CASES = [
    pytest.param(lambda x: torch.mode(x), [_small_ints(4, 9)], ["eq", "amin", "amax"], id="mode-last-dim"),
    pytest.param(lambda x: torch.mode(x, 0, keepdim=True), [_small_ints(7, 3)], ["amin"], id="mode-dim0-keepdim"),
    pytest.param(lambda x: torch.mode(x, 1), [_small_ints(2, 6, 3)], ["amin"], id="mode-middle-dim"),
    pytest.param(lambda x: torch.mode(x), [(5,)], ["amin"], id="mode-all-distinct-takes-smallest"),
    pytest.param(lambda x: torch.histc(x, 7, -1, 1.5), [(40,)], ["floor", "sum"], id="histc-range"),
    pytest.param(lambda x: torch.histc(x, 5), [(3, 8)], ["amin", "amax"], id="histc-data-range"),
    pytest.param(lambda x: torch.histc(x * 0 + 2, 4), [(6,)], ["sum"], id="histc-one-value"),
    pytest.param(lambda x: torch.histogram(x, 6), [(50,)], ["sum"], id="histogram-bins"),
    pytest.param(lambda x: torch.histogram(x, 4, range=(-1.0, 1.0), density=True), [(5, 6)], ["div"],
                 id="histogram-range-density"),
    pytest.param(lambda x, w: torch.histogram(x, 3, weight=w.abs()), [(30,), (30,)], ["mul"],
                 id="histogram-weighted"),
    pytest.param(_edges, [(30,)], ["sum"], id="histogram-edge-tensor"),
    pytest.param(lambda x, e: torch.histogram(x, e.sort().values), [(30,), (5,)], ["sum"],
                 id="histogram-edges-as-input"),
    pytest.param(lambda x: _dd(x, [3, 2]), [(20, 2)], ["select", "sum"], id="histogramdd-2d"),
    pytest.param(lambda x: _dd(x, [2, 3, 2], range=[-1.0, 1.0, -2.0, 2.0, 0.0, 1.0], density=True),
                 [(4, 10, 3)], ["div"], id="histogramdd-range-density"),
    pytest.param(lambda x: _dd(x, [torch.tensor([-1.0, 0.0, 1.0]), torch.tensor([-3.0, 3.0])]),
                 [(15, 2)], ["sum"], id="histogramdd-edge-tensors"),
    pytest.param(_Segments("sum", [2, 0, 3, 1]), [(6,)], ["where", "sum"], id="segment-sum"),
    pytest.param(_Segments("mean", [1, 0, 3, 2]), [(6, 2)], ["div"], id="segment-mean-empty-is-nan"),
    pytest.param(_Segments("mean", [1, 0, 3, 2], initial=0.5), [(6, 2)], ["div"], id="segment-mean-initial"),
    pytest.param(_Segments("max", [0, 1, 2, 2], initial=1), [(5,)], ["amax", "maximum"], id="segment-max-initial"),
    pytest.param(_Segments("min", [2, 3]), [(5, 3)], ["amin"], id="segment-min"),
    pytest.param(_Segments("prod", [0, 2, 2, 5], "offsets", initial=2.0), [(5,)], ["prod", "mul"],
                 id="segment-prod-offsets"),
    pytest.param(_Segments("sum", [[2, 3], [1, 4]], axis=1), [(2, 5, 3)], ["sum"], id="segment-sum-axis1-batched"),
]


@pytest.mark.parametrize("fn, inputs, ops", CASES)
def test_counts_case(target, fn, inputs, ops):
    torch.manual_seed(0)
    tensors = [make() if callable(make) else torch.randn(make) for make in inputs]
    check_torch_op(fn if isinstance(fn, torch.nn.Module) else Wrap(fn), *tensors, expect_ops=ops, target=target,
                   **TOL)
