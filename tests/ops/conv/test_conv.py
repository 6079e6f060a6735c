"""conv and conv_transpose: torch -> IR -> NumPy reference and both targets' emitted models, against torch."""
import tempfile

import jax
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from portx.targets.keras_jax.emitter import emit_keras
from portx.frontends.torch import export_module, lower_exported
from portx.ops.conv import CONV, CONV_TRANSPOSE, conv_numpy, conv_transpose_numpy, keras_same_pads
from portx.ops.conv.to_keras import transposed_as_conv_pads
from tests.support.harness import check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}


def _conv(*args, **kwargs):
    return lambda: nn.Conv2d(*args, **kwargs)


def _conv1(*args, **kwargs):
    return lambda: nn.Conv1d(*args, **kwargs)


def _deconv(*args, **kwargs):
    return lambda: nn.ConvTranspose2d(*args, **kwargs)


def _functional(fn):
    return lambda: fn


# (module factory, input shapes, IR op expected); inputs are seeded normal floats.
CASES = [
    pytest.param(_conv1(3, 4, 3), [(2, 3, 11)], "conv", id="conv1d"),
    pytest.param(_conv1(3, 4, 3, stride=2, padding=1), [(1, 3, 10)], "conv", id="conv1d-stride2-pad1"),
    pytest.param(_conv1(3, 4, 4, padding="same"), [(1, 3, 9)], "conv", id="conv1d-same-even-kernel"),
    pytest.param(_conv1(3, 4, 3, padding="same", dilation=3), [(1, 3, 12)], "conv", id="conv1d-same-dilated"),
    pytest.param(_conv1(3, 6, 3, groups=3, bias=False), [(1, 3, 8)], "conv", id="conv1d-depthwise-x2"),
    pytest.param(_conv(3, 5, 3), [(2, 3, 8, 8)], "conv", id="conv2d"),
    pytest.param(_conv(3, 5, 3, bias=False), [(1, 3, 8, 8)], "conv", id="conv2d-nobias"),
    pytest.param(_conv(3, 5, (3, 2), padding=(1, 0)), [(1, 3, 8, 7)], "conv", id="conv2d-rect-kernel-pad"),
    pytest.param(_conv(3, 4, 3, stride=2, padding=1), [(1, 3, 8, 8)], "conv", id="conv2d-s2-p1-even"),
    pytest.param(_conv(3, 4, 3, stride=2, padding=1), [(1, 3, 7, 7)], "conv", id="conv2d-s2-p1-odd"),
    pytest.param(_conv(3, 4, 3, stride=(2, 1), padding=2), [(1, 3, 9, 6)], "conv", id="conv2d-s21-p2"),
    pytest.param(_conv(3, 4, 3, padding="same"), [(1, 3, 6, 6)], "conv", id="conv2d-same"),
    pytest.param(_conv(3, 4, 4, padding="same", dilation=2), [(1, 3, 9, 9)], "conv", id="conv2d-same-even-d2"),
    pytest.param(_conv(3, 4, 3, padding="valid"), [(1, 3, 6, 6)], "conv", id="conv2d-valid"),
    pytest.param(_conv(3, 4, 3, dilation=2, padding=2), [(1, 3, 9, 9)], "conv", id="conv2d-dilation2"),
    pytest.param(_conv(3, 4, 3, stride=2, dilation=2, padding=1), [(1, 3, 11, 11)], "conv",
                 id="conv2d-stride-and-dilation"),
    pytest.param(_conv(4, 4, 3, groups=4, padding=1), [(1, 4, 6, 6)], "conv", id="conv2d-depthwise-x1"),
    pytest.param(_conv(4, 8, 3, groups=4, stride=2, padding=1), [(1, 4, 7, 7)], "conv", id="conv2d-depthwise-x2"),
    pytest.param(_conv(4, 6, 3, groups=2, padding=1), [(1, 4, 6, 6)], "conv", id="conv2d-grouped"),
    pytest.param(_conv(4, 8, 3, groups=4, stride=2, dilation=2), [(1, 4, 9, 9)], "conv",
                 id="conv2d-depthwise-stride-dilation"),
    pytest.param(lambda: nn.Conv3d(2, 3, 3, padding=1, stride=(1, 2, 2)), [(1, 2, 4, 6, 6)], "conv", id="conv3d"),
    pytest.param(lambda: nn.Conv3d(2, 4, 2, groups=2), [(1, 2, 3, 4, 4)], "conv", id="conv3d-depthwise"),
    pytest.param(_functional(lambda x, w: F.conv2d(x, w * 2.0, padding=1)), [(1, 3, 6, 6), (4, 3, 3, 3)], "conv",
                 id="conv2d-computed-weight"),
    pytest.param(_functional(lambda x, w, b: F.conv1d(x, w.abs(), b + 1, stride=2, groups=2)),
                 [(1, 4, 9), (6, 2, 3), (6,)], "conv", id="conv1d-computed-weight-bias-groups"),
    pytest.param(_conv1(3, 4, 3), [(3, 11)], "conv", id="conv1d-unbatched"),
    pytest.param(_conv(3, 5, 3, stride=2), [(3, 8, 8)], "conv", id="conv2d-unbatched"),
    pytest.param(lambda: nn.Conv3d(2, 3, 3, padding=1), [(2, 4, 5, 5)], "conv", id="conv3d-unbatched"),
    pytest.param(_deconv(3, 4, 3, stride=2), [(3, 4, 5)], "conv_transpose", id="deconv2d-unbatched"),
    pytest.param(_deconv(3, 4, 3), [(1, 3, 5, 5)], "conv_transpose", id="deconv2d"),
    pytest.param(_deconv(3, 4, 3, bias=False), [(1, 3, 5, 5)], "conv_transpose", id="deconv2d-nobias"),
    pytest.param(_deconv(3, 4, 3, stride=2), [(1, 3, 4, 5)], "conv_transpose", id="deconv2d-s2"),
    pytest.param(_deconv(3, 4, 1, stride=2), [(1, 3, 4, 4)], "conv_transpose", id="deconv2d-stride-gt-kernel"),
    pytest.param(_deconv(3, 4, 2, stride=3), [(1, 3, 3, 4)], "conv_transpose", id="deconv2d-s3-k2"),
    pytest.param(_deconv(3, 4, 3, stride=2, padding=1), [(1, 3, 4, 4)], "conv_transpose", id="deconv2d-s2-p1"),
    pytest.param(_deconv(3, 4, 3, stride=2, padding=1, output_padding=1), [(1, 3, 4, 4)], "conv_transpose",
                 id="deconv2d-s2-p1-op1"),
    pytest.param(_deconv(3, 4, 4, stride=2, padding=1), [(1, 3, 4, 4)], "conv_transpose", id="deconv2d-k4-s2-p1"),
    pytest.param(_deconv(3, 4, (3, 5), stride=(2, 3), padding=(0, 2), output_padding=(1, 2)), [(1, 3, 3, 4)],
                 "conv_transpose", id="deconv2d-asymmetric"),
    pytest.param(_deconv(3, 4, 3, dilation=2, padding=1), [(1, 3, 5, 5)], "conv_transpose", id="deconv2d-d2"),
    pytest.param(_deconv(3, 4, 3, stride=2, dilation=2, padding=1, output_padding=1), [(1, 3, 4, 4)],
                 "conv_transpose", id="deconv2d-stride-and-dilation"),
    pytest.param(_deconv(3, 4, 3, dilation=3, output_padding=2), [(1, 3, 4, 4)], "conv_transpose",
                 id="deconv2d-output-padding-ge-stride"),
    pytest.param(_deconv(4, 6, 3, stride=2, groups=2, padding=1), [(1, 4, 4, 4)], "conv_transpose",
                 id="deconv2d-grouped"),
    pytest.param(lambda: nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1), [(2, 3, 6)],
                 "conv_transpose", id="deconv1d"),
    pytest.param(lambda: nn.ConvTranspose3d(2, 3, 2, stride=2), [(1, 2, 2, 3, 3)], "conv_transpose", id="deconv3d"),
    pytest.param(_functional(lambda x, w: F.conv_transpose2d(x, w + 1.0, stride=2, padding=1)),
                 [(1, 3, 4, 4), (3, 2, 3, 3)], "conv_transpose", id="deconv2d-computed-weight"),
    pytest.param(_functional(lambda x, w, b: F.conv_transpose1d(x, w * 2.0, b * 2.0, 2, 0, 1, 2)),
                 [(1, 4, 5), (4, 3, 3), (6,)], "conv_transpose", id="deconv1d-computed-weight-groups"),
    pytest.param(_functional(lambda x, w: F.conv2d(x, w * 2.0, stride=2, groups=4)), [(1, 4, 7, 7), (8, 1, 3, 3)],
                 "conv", id="conv2d-computed-depthwise"),
    pytest.param(_functional(lambda x, w: torch.ops.aten.convolution(x, w, None, [2], [1], [1], False, [0], 1)),
                 [(1, 3, 8), (4, 3, 3)], "conv", id="aten-convolution"),
    pytest.param(_functional(lambda x, w: torch.ops.aten.convolution(x, w, None, [2], [1], [1], True, [1], 1)),
                 [(1, 3, 5), (3, 4, 3)], "conv_transpose", id="aten-convolution-transposed"),
]


@pytest.mark.parametrize("make, shapes, op", CASES)
def test_conv_case(target, make, shapes, op):
    torch.manual_seed(0)
    inputs = [torch.randn(s) for s in shapes]
    check_torch_op(make(), *inputs, expect_ops=[op], target=target, **TOL)


def _keras_layers(module, x):
    """Lower and emit ``module``; return {class name: config} of the emitted Keras layers."""
    graph = lower_exported(export_module(module, [x]))
    with tempfile.TemporaryDirectory() as tmp:
        model = emit_keras(graph, tmp)["model"]
    return {type(layer).__name__: layer.get_config() for layer in model.layers}


@pytest.mark.parametrize("size, same", [(7, True), (8, False)])
def test_keras_same_only_where_it_pads_like_torch(size, same):
    # Keras' "same" with stride 2 pads (0, 1) on even sizes; torch's padding=1 pads (1, 1).
    torch.manual_seed(0)
    layers = _keras_layers(nn.Conv2d(3, 4, 3, stride=2, padding=1), torch.randn(1, 3, size, size))
    assert layers["Conv2D"]["padding"] == ("same" if same else "valid")
    assert ("ZeroPadding2D" in layers) is not same


def test_depthwise_and_grouped_pick_their_layers():
    torch.manual_seed(0)
    assert "DepthwiseConv2D" in _keras_layers(nn.Conv2d(4, 8, 3, groups=4), torch.randn(1, 4, 6, 6))
    assert _keras_layers(nn.Conv2d(4, 6, 3, groups=2), torch.randn(1, 4, 6, 6))["Conv2D"]["groups"] == 2


@pytest.mark.parametrize("module, layer", [
    (nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1), "Conv2DTranspose"),
    (nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2), "Conv2D"),
    (nn.ConvTranspose2d(3, 4, 3, stride=2, dilation=2), "Conv2D"),
])
def test_transposed_conv_layer_choice(module, layer):
    # Note [transposed conv as conv]: groups and stride-with-dilation become a forward Conv2D.
    assert layer in _keras_layers(module, torch.randn(1, module.in_channels, 4, 4))


def test_transposed_as_conv_pads_example():
    assert transposed_as_conv_pads((3,), (2,), (1,), (1,), (1,)) == ((1, 1),)
    assert transposed_as_conv_pads((1,), (3,), (1,), (0,), (1,)) == ((-1, -3),)


@pytest.mark.parametrize("size, k, s, d", [(8, 3, 2, 1), (7, 3, 2, 1), (9, 4, 1, 2), (5, 1, 3, 1), (6, 5, 3, 2)])
def test_keras_same_pads_matches_jax(size, k, s, d):
    want = jax.lax.padtype_to_pads((size,), ((k - 1) * d + 1,), (s,), "SAME")[0]
    assert keras_same_pads(size, k, s, d) == tuple(want)


def _torch_conv(x, w, b, stride, pads, dilation, groups):
    rank = w.ndim - 2
    fn = (F.conv1d, F.conv2d, F.conv3d)[rank - 1]
    flat = [p for pair in reversed(pads) for p in pair]  # F.pad wants last axis first
    xt = F.pad(torch.from_numpy(x), flat)
    bt = None if b is None else torch.from_numpy(b)
    return fn(xt, torch.from_numpy(w), bt, stride, 0, dilation, groups).numpy()


conv_attrs = st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2),
                       st.integers(0, 2), st.integers(0, 2), st.sampled_from([1, 2]), st.booleans())


@given(st.sampled_from([1, 2, 3]), conv_attrs, st.integers(0, 2**16))
def test_conv_numpy_matches_torch(rank, attrs, seed):
    k, stride, dilation, groups_per, lo, hi, mult, bias = attrs
    groups = groups_per
    rng = np.random.default_rng(seed)
    cin, cout = 2 * groups, groups * mult
    size = (k - 1) * dilation + 1 + rng.integers(0, 4)
    x = rng.standard_normal((2, cin) + (size,) * rank).astype(np.float32)
    w = rng.standard_normal((cout, cin // groups) + (k,) * rank).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    attrs = {"stride": (stride,) * rank, "pads": ((lo, hi),) * rank, "dilation": (dilation,) * rank,
             "groups": groups}
    got = conv_numpy(x, w, b, **attrs)
    want = _torch_conv(x, w, b, attrs["stride"], attrs["pads"], attrs["dilation"], groups)
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


@given(st.sampled_from([1, 2, 3]), conv_attrs, st.integers(0, 2**16))
def test_conv_transpose_numpy_matches_torch(rank, attrs, seed):
    k, stride, dilation, groups, pad, out_pad, mult, bias = attrs
    out_pad = out_pad % max(stride, dilation)
    pad = min(pad, (k - 1) * dilation // 2)
    rng = np.random.default_rng(seed)
    cin = 2 * groups
    x = rng.standard_normal((2, cin) + (3,) * rank).astype(np.float32)
    w = rng.standard_normal((cin, mult) + (k,) * rank).astype(np.float32)
    b = rng.standard_normal(mult * groups).astype(np.float32) if bias else None
    attrs = {"stride": (stride,) * rank, "padding": (pad,) * rank, "output_padding": (out_pad,) * rank,
             "dilation": (dilation,) * rank, "groups": groups}
    got = conv_transpose_numpy(x, w, b, **attrs)
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[rank - 1]
    want = fn(torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b),
              stride, pad, out_pad, groups, dilation).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


@given(st.integers(1, 3), st.integers(1, 2), st.integers(0, 2), st.integers(1, 2), st.sampled_from([1, 2]),
       st.integers(0, 4), st.booleans())
def test_conv2d_property(target, k, stride, pad, dilation, groups, extra, transposed):
    torch.manual_seed(0)
    size = (k - 1) * dilation + 1 + extra
    if transposed:
        out_pad = (extra % max(stride, dilation))
        module = nn.ConvTranspose2d(2 * groups, 2 * groups, k, stride, min(pad, (k - 1) * dilation // 2),
                                    out_pad, groups, True, dilation)
        op = CONV_TRANSPOSE
    else:
        module = nn.Conv2d(2 * groups, 2 * groups, k, stride, pad, dilation, groups)
        op = CONV
    graph = check_torch_op(module, torch.randn(1, 2 * groups, size, size + 1), target=target, **TOL)
    assert [n.op for n in graph.nodes] == [op]
