"""max_pool, avg_pool and adaptive pools: torch -> IR -> NumPy reference and both emitted models, against torch."""
import ast
import tempfile

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given
from hypothesis import strategies as st
from torch import nn

from portx.targets.keras_jax.emitter import emit_keras
from portx.targets.torch_xla.emitter import emit_torch
from portx.errors import UnsupportedOps
from portx.frontends.torch import export_module, lower_exported
from portx.ops.pool.adaptive import adaptive_bins
from portx.ops.pool import AVG_POOL, MAX_POOL, pooled_size
from portx.passes.pipeline import run_passes
from tests.support.harness import check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}


def _fn(fn):
    return lambda: fn


# (module factory, input shape, IR op expected); inputs are seeded normal floats.
CASES = [
    pytest.param(lambda: _WithIndices(2, 2), (2, 3, 6, 6), "argmax", id="max2d-indices"),
    pytest.param(lambda: _WithIndices(2, 3, 2, 1), (1, 2, 7, 8), "gather", id="max2d-indices-pad"),
    pytest.param(lambda: _WithIndices(2, 3, 2, 1, 2, True), (1, 2, 9, 8), "gather", id="max2d-indices-dilated-ceil"),
    pytest.param(lambda: _WithIndices(1, 3, 2), (2, 3, 9), "gather", id="max1d-indices"),
    pytest.param(lambda: _WithIndices(3, 2), (1, 2, 4, 4, 6), "gather", id="max3d-indices"),
    pytest.param(lambda: _WithIndices(2, 2), (3, 6, 6), "gather", id="max2d-indices-unbatched"),
    pytest.param(lambda: _AdaptiveWithIndices(2, (3, 4)), (1, 2, 7, 9), "gather", id="amax2d-indices-uneven"),
    pytest.param(lambda: _AdaptiveWithIndices(2, 2), (2, 3, 6, 4), "gather", id="amax2d-indices-even"),
    pytest.param(lambda: _AdaptiveWithIndices(1, 3), (2, 3, 8), "gather", id="amax1d-indices"),
    pytest.param(lambda: _AdaptiveWithIndices(3, (2, 3, 2)), (1, 2, 3, 5, 4), "gather", id="amax3d-indices"),
    pytest.param(lambda: nn.MaxPool3d(2), (1, 2, 4, 6, 6), "max_pool", id="max3d"),
    pytest.param(lambda: nn.MaxPool3d(3, 2, 1), (1, 2, 5, 7, 6), "max_pool", id="max3d-k3-s2-p1"),
    pytest.param(lambda: nn.AvgPool3d(2), (1, 2, 4, 6, 6), "avg_pool", id="avg3d"),
    pytest.param(lambda: nn.AvgPool3d(3, 2, 1, count_include_pad=False), (1, 2, 5, 7, 6), "avg_pool",
                 id="avg3d-pad-exclude"),
    pytest.param(lambda: nn.AdaptiveAvgPool3d((2, 3, 1)), (1, 2, 4, 6, 5), "adaptive_avg_pool", id="aavg3d"),
    pytest.param(lambda: nn.AdaptiveAvgPool3d((3, 2, 4)), (1, 2, 5, 5, 7), "adaptive_avg_pool", id="aavg3d-uneven"),
    pytest.param(lambda: nn.AdaptiveMaxPool3d(2), (1, 2, 4, 6, 4), "adaptive_max_pool", id="amax3d"),
    pytest.param(lambda: nn.AdaptiveMaxPool3d((3, 2, 3)), (1, 2, 5, 5, 7), "adaptive_max_pool", id="amax3d-uneven"),
    pytest.param(lambda: nn.AvgPool2d(2, divisor_override=3), (1, 2, 4, 6), "avg_pool", id="avg2d-divisor-override"),
    pytest.param(lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, divisor_override=5), (1, 2, 6, 7), "avg_pool",
                 id="avg2d-divisor-override-ceil-pad"),
    pytest.param(lambda: nn.MaxPool2d(3, 2, 1), (3, 7, 7), "max_pool", id="max2d-unbatched"),
    pytest.param(lambda: nn.AvgPool1d(3, 2), (3, 9), "avg_pool", id="avg1d-unbatched"),
    pytest.param(lambda: nn.AdaptiveAvgPool2d((3, 2)), (2, 7, 5), "adaptive_avg_pool", id="aavg2d-unbatched"),
    pytest.param(lambda: nn.AdaptiveMaxPool2d(2), (2, 6, 4), "adaptive_max_pool", id="amax2d-unbatched"),
    pytest.param(lambda: nn.MaxPool2d(2), (2, 3, 8, 8), "max_pool", id="max2d-k2"),
    pytest.param(lambda: nn.MaxPool2d(3, 2, 1), (1, 3, 7, 7), "max_pool", id="max2d-k3-s2-p1-odd-same"),
    pytest.param(lambda: nn.MaxPool2d(3, 2, 1), (1, 3, 8, 8), "max_pool", id="max2d-k3-s2-p1-even"),
    pytest.param(lambda: nn.MaxPool2d(3, 1, 1), (1, 2, 5, 6), "max_pool", id="max2d-k3-s1-p1"),
    pytest.param(lambda: nn.MaxPool2d(3, 2, ceil_mode=True), (1, 2, 8, 9), "max_pool", id="max2d-ceil"),
    pytest.param(lambda: nn.MaxPool2d(2, 2, 1, ceil_mode=True), (1, 2, 7, 8), "max_pool", id="max2d-ceil-pad"),
    pytest.param(lambda: nn.MaxPool2d(3, 3, 1, ceil_mode=True), (1, 2, 5, 5), "max_pool",
                 id="max2d-ceil-last-window-dropped"),
    pytest.param(lambda: nn.MaxPool2d((3, 2), (2, 1), (1, 0)), (1, 2, 7, 6), "max_pool", id="max2d-rect"),
    pytest.param(lambda: nn.MaxPool2d(3, 1, 1, dilation=2), (1, 2, 7, 7), "max_pool", id="max2d-dilation2"),
    pytest.param(lambda: nn.MaxPool2d(2, 2, 1, dilation=(2, 3), ceil_mode=True), (1, 2, 8, 9), "max_pool",
                 id="max2d-dilation-ceil"),
    pytest.param(_fn(lambda x: F.max_pool2d(x, 2, return_indices=True)[0]), (1, 2, 6, 6), "max_pool",
                 id="max2d-with-indices-values"),
    pytest.param(_fn(lambda x: F.max_pool2d(-x.abs() - 1, 3, 2, 1)), (1, 2, 6, 6), "max_pool",
                 id="max2d-negative-inputs-pad-is-minus-inf"),
    pytest.param(lambda: nn.MaxPool1d(3, 2, 1, ceil_mode=True), (2, 3, 10), "max_pool", id="max1d-ceil"),
    pytest.param(lambda: nn.MaxPool1d(2, dilation=2), (1, 3, 9), "max_pool", id="max1d-dilation"),
    pytest.param(lambda: nn.AvgPool2d(2), (2, 3, 8, 8), "avg_pool", id="avg2d-k2"),
    pytest.param(lambda: nn.AvgPool2d(3, 2, 1), (1, 3, 7, 7), "avg_pool", id="avg2d-pad-include"),
    pytest.param(lambda: nn.AvgPool2d(3, 2, 1, count_include_pad=False), (1, 3, 7, 7), "avg_pool",
                 id="avg2d-pad-exclude-keras-same"),
    pytest.param(lambda: nn.AvgPool2d(3, 2, 1, count_include_pad=False), (1, 3, 8, 8), "avg_pool",
                 id="avg2d-pad-exclude-even"),
    pytest.param(lambda: nn.AvgPool2d(3, 2, ceil_mode=True), (1, 2, 8, 8), "avg_pool", id="avg2d-ceil"),
    pytest.param(lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True), (1, 2, 8, 9), "avg_pool", id="avg2d-ceil-pad-include"),
    pytest.param(lambda: nn.AvgPool2d(2, 2, 1, ceil_mode=True, count_include_pad=False), (1, 2, 7, 8), "avg_pool",
                 id="avg2d-ceil-pad-exclude"),
    pytest.param(lambda: nn.AvgPool2d((3, 1), (1, 2), (1, 0)), (1, 2, 5, 6), "avg_pool", id="avg2d-rect"),
    pytest.param(lambda: nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 10), "avg_pool",
                 id="avg1d-ceil-exclude"),
    pytest.param(lambda: nn.AvgPool1d(4, 3, 2), (1, 3, 9), "avg_pool", id="avg1d-pad-include"),
    pytest.param(lambda: nn.AdaptiveAvgPool2d(1), (2, 4, 7, 5), "adaptive_avg_pool", id="aavg2d-global"),
    pytest.param(lambda: nn.AdaptiveAvgPool2d((2, 3)), (1, 4, 8, 9), "adaptive_avg_pool", id="aavg2d-divisible"),
    pytest.param(lambda: nn.AdaptiveAvgPool2d((3, 4)), (1, 4, 7, 9), "adaptive_avg_pool", id="aavg2d-uneven"),
    pytest.param(lambda: nn.AdaptiveAvgPool2d((5, 7)), (1, 2, 3, 4), "adaptive_avg_pool", id="aavg2d-upsampling"),
    pytest.param(lambda: nn.AdaptiveAvgPool2d((None, 3)), (1, 2, 5, 7), "adaptive_avg_pool", id="aavg2d-none"),
    pytest.param(lambda: nn.AdaptiveAvgPool1d(3), (2, 3, 10), "adaptive_avg_pool", id="aavg1d-uneven"),
    pytest.param(lambda: nn.AdaptiveMaxPool2d(1), (2, 4, 7, 5), "adaptive_max_pool", id="amax2d-global"),
    pytest.param(lambda: nn.AdaptiveMaxPool2d((2, 3)), (1, 4, 8, 9), "adaptive_max_pool", id="amax2d-divisible"),
    pytest.param(lambda: nn.AdaptiveMaxPool2d((3, 4)), (1, 4, 7, 9), "adaptive_max_pool", id="amax2d-uneven"),
    pytest.param(lambda: nn.AdaptiveMaxPool2d((5, 7)), (1, 2, 3, 4), "adaptive_max_pool", id="amax2d-upsampling"),
    pytest.param(lambda: nn.AdaptiveMaxPool2d((4, 4)), (1, 2, 4, 6), "adaptive_max_pool", id="amax2d-one-axis-same"),
    pytest.param(lambda: nn.AdaptiveMaxPool1d(4), (2, 3, 10), "adaptive_max_pool", id="amax1d-uneven"),
]


@pytest.mark.parametrize("make, shape, op", CASES)
def test_pool_case(target, make, shape, op):
    torch.manual_seed(0)
    graph = check_torch_op(make(), torch.randn(shape), expect_ops=[op], target=target, **TOL)
    assert [n.op.name for n in graph.nodes][-1] in (op, "reshape", "mul")  # unbatched / indices / divisor_override


def _emitted(module, x):
    """Lower ``module``, run the keras-jax passes and emit; return (Keras layer class names, model.py text)."""
    graph = run_passes(lower_exported(export_module(module, [x])), "keras-jax")
    with tempfile.TemporaryDirectory() as tmp:
        files = emit_keras(graph, tmp)
        code = files["code"].read_text()
    return [type(layer).__name__ for layer in files["model"].layers], code


@pytest.mark.parametrize("module, shape, layer, padding", [
    (nn.MaxPool2d(3, 2, 1), (1, 2, 7, 7), "MaxPooling2D", "'same'"),
    (nn.MaxPool2d(3, 2, 1), (1, 2, 8, 8), "MaxPooling2D", "-inf"),
    (nn.AvgPool2d(3, 2, 1, count_include_pad=False), (1, 2, 7, 7), "AveragePooling2D", "'same'"),
    (nn.AvgPool2d(3, 2, 1), (1, 2, 7, 7), "ZeroPadding2D", "AveragePooling2D(3, strides=2, name="),  # valid
    (nn.AvgPool2d(2, 2, 1, ceil_mode=True, count_include_pad=False), (1, 2, 7, 8), "AveragePooling2D",
     "divisor_fix"),
    (nn.AdaptiveAvgPool2d(1), (1, 2, 5, 5), "GlobalAveragePooling2D", "keepdims=True"),
    (nn.AdaptiveMaxPool2d(1), (1, 2, 5, 5), "GlobalMaxPooling2D", "keepdims=True"),
    (nn.AdaptiveAvgPool2d((2, 5)), (1, 2, 6, 10), "AveragePooling2D", "AveragePooling2D((3, 2), name="),
    (nn.AdaptiveAvgPool2d((3, 4)), (1, 2, 7, 9), "InputLayer", "bin_rows"),
])
def test_keras_form(module, shape, layer, padding):
    # Keras "same" only where it pads exactly as torch; -inf border for max; divisor map for avg;
    # uneven adaptive bins legalized into bin-mean matmuls (passes/legalize/pool.py).
    layers, code = _emitted(module, torch.randn(shape))
    assert layer in layers
    assert padding in ast.unparse(ast.parse(code))  # one line a statement, however model.py wraps it


@pytest.mark.parametrize("emit", [emit_keras, emit_torch])
@pytest.mark.parametrize("module", [nn.AdaptiveAvgPool2d((3, 4)), nn.AdaptiveMaxPool2d((3, 4))])
def test_uneven_adaptive_bins_are_left_to_legalization(emit, module):
    # the emit rules write pooling layers only; an unlegalized graph with uneven bins is refused (exit 3)
    graph = lower_exported(export_module(module, [torch.randn(1, 2, 7, 9)]))
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(UnsupportedOps, match=r"7->3 x 9->4 has uneven bins"):
        emit(graph, tmp)


class _WithIndices(nn.Module):
    """Both outputs of ``F.max_pool{n}d(..., return_indices=True)`` (Note [max pool indices])."""

    def __init__(self, n, *args, **kwargs):
        super().__init__()
        self.pool, self.args, self.kwargs = getattr(F, f"max_pool{n}d"), args, kwargs

    def forward(self, x):
        return self.pool(x, *self.args, return_indices=True, **self.kwargs)


class _AdaptiveWithIndices(nn.Module):
    def __init__(self, n, size):
        super().__init__()
        self.pool, self.size = getattr(F, f"adaptive_max_pool{n}d"), size

    def forward(self, x):
        return self.pool(x, self.size, return_indices=True)


def test_adaptive_max_pool_indices_of_huge_bins_are_refused():
    with pytest.raises(UnsupportedOps, match="indices of adaptive max pooling with 289 positions per bin"):
        lower_exported(export_module(_AdaptiveWithIndices(2, 1), [torch.randn(1, 2, 17, 17)]))


def test_adaptive_bins_match_torch_formula():
    starts, ends = adaptive_bins(5, 3)
    assert starts.tolist() == [0, 1, 3] and ends.tolist() == [2, 4, 5]


window = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(0, 1), st.integers(1, 2), st.booleans(),
                   st.booleans())


@given(st.integers(1, 9), st.integers(1, 9), window)
def test_window_pool_references_match_torch(h, w, attrs):
    k, s, pad, dilation, ceil_mode, include = attrs
    pad = min(pad, k // 2)
    assume(pooled_size(min(h, w), k, s, (pad, pad), dilation, ceil_mode) >= 1)
    x = np.random.default_rng(h * 10 + w).standard_normal((1, 2, h, w)).astype(np.float32)
    common = {"kernel": (k, k), "stride": (s, s), "pads": ((pad, pad),) * 2, "ceil_mode": ceil_mode}
    got = MAX_POOL.reference_rule(x, dilation=(dilation, dilation), **common)
    want = F.max_pool2d(torch.from_numpy(x), k, s, pad, dilation, ceil_mode).numpy()
    np.testing.assert_array_equal(got, want)
    got = AVG_POOL.reference_rule(x, count_include_pad=include, **common)
    want = F.avg_pool2d(torch.from_numpy(x), k, s, pad, ceil_mode, include).numpy()
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=1e-5)


@given(st.integers(1, 9), st.integers(1, 9), window, st.booleans())
def test_window_pool_property(target, h, w, attrs, use_max):
    k, s, pad, dilation, ceil_mode, include = attrs
    pad = min(pad, k // 2)
    assume(pooled_size(min(h, w), k, s, (pad, pad), dilation, ceil_mode) >= 1)
    if use_max:
        module = nn.MaxPool2d(k, s, pad, dilation, ceil_mode=ceil_mode)
    else:
        module = nn.AvgPool2d(k, s, pad, ceil_mode=ceil_mode, count_include_pad=include)
    torch.manual_seed(0)
    op = "max_pool" if use_max else "avg_pool"
    check_torch_op(module, torch.randn(1, 2, h, w), expect_ops=[op], target=target, **TOL)


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9), st.booleans())
def test_adaptive_pool_property(target, h, w, oh, ow, use_max):
    module = nn.AdaptiveMaxPool2d((oh, ow)) if use_max else nn.AdaptiveAvgPool2d((oh, ow))
    torch.manual_seed(0)
    check_torch_op(module, torch.randn(1, 2, h, w), target=target, **TOL)
