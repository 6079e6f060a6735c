"""pad: torch F.pad / nn.*Pad* / explicit ATen pads -> IR -> NumPy reference and both emitted models, exactly."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from portx.ops.pad import PAD
from portx.ops.pad.from_torch import torch_pads
from tests.support.harness import check_torch_op

EXACT = {"atol": 0.0, "rtol": 0.0}  # data movement: every element must match bit for bit
aten = torch.ops.aten


# (torch function or module, input shape)
CASES = [
    pytest.param(lambda x: F.pad(x, (1, 2)), (2, 3, 5), id="zero-1d-layer"),
    pytest.param(nn.ZeroPad2d((1, 2, 0, 1)), (1, 2, 4, 5), id="zeropad2d-layer"),
    pytest.param(lambda x: F.pad(x, (1, 0, 0, 2, 1, 1)), (1, 2, 3, 3, 2), id="zero-3d-layer"),
    pytest.param(lambda x: F.pad(x, (1, 1)), (4, 5), id="zero-rank2-ops"),
    pytest.param(lambda x: F.pad(x, (0, 0, 0, 0, 1, 2)), (1, 2, 3, 3), id="zero-channels-ops"),
    pytest.param(nn.ConstantPad2d(1, 3.5), (1, 2, 3, 3), id="constant-value"),
    pytest.param(lambda x: F.pad(x, (1, -1, -2, 0)), (1, 2, 4, 5), id="constant-negative-crops"),
    pytest.param(lambda x: F.pad(x, (-1, -1)), (2, 5), id="crop-only"),
    pytest.param(lambda x: aten.constant_pad_nd(x, [2, 1], -1.5), (2, 3, 4), id="aten-constant-pad-nd"),
    pytest.param(nn.ReflectionPad1d((2, 1)), (1, 2, 5), id="reflect-1d"),
    pytest.param(nn.ReflectionPad2d((1, 2, 2, 0)), (1, 2, 4, 5), id="reflect-2d"),
    pytest.param(nn.ReflectionPad3d(1), (1, 1, 3, 3, 3), id="reflect-3d"),
    pytest.param(lambda x: F.pad(x, (2, -1), mode="reflect"), (1, 2, 5), id="reflect-negative"),
    pytest.param(lambda x: aten.reflection_pad2d(x, [1, 1, 2, 0]), (1, 2, 4, 5), id="aten-reflection-pad2d"),
    pytest.param(nn.ReplicationPad1d((3, 0)), (1, 2, 4), id="replicate-1d"),
    pytest.param(nn.ReplicationPad2d((0, 1, 2, 3)), (1, 2, 3, 3), id="replicate-2d"),
    pytest.param(nn.ReplicationPad3d((1, 0, 0, 1, 1, 0)), (1, 1, 2, 3, 2), id="replicate-3d"),
    pytest.param(lambda x: aten.replication_pad1d(x, [1, 2]), (1, 2, 4), id="aten-replication-pad1d"),
    pytest.param(lambda x: F.pad(x, (-1, 2), mode="replicate"), (1, 2, 6), id="replicate-negative"),
    pytest.param(lambda x: F.pad(x, (-4, 5, 0, 0), mode="replicate"), (2, 3, 4, 4), id="replicate-crops-the-axis"),
    pytest.param(lambda x: F.pad(x, (3, -4), mode="replicate"), (1, 2, 4), id="replicate-crops-the-axis-end"),
    pytest.param(nn.CircularPad2d((1, 2, 0, 1)), (1, 2, 3, 4), id="circular-2d"),
    pytest.param(lambda x: F.pad(x, (2, -1), mode="circular"), (1, 2, 5), id="circular-negative-crops-first"),
    pytest.param(lambda x: F.pad(x, (3, 3), mode="circular"), (1, 2, 3), id="circular-full-wrap"),
]


@pytest.mark.parametrize("fn, shape", CASES)
def test_pad_matches_torch(target, fn, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_torch_op(fn, x, expect_ops=["pad"], target=target, **EXACT)


def test_zero_pad_on_spatial_axes_is_a_keras_layer(target, tmp_path):
    from portx.targets.keras_jax.emitter import emit_keras

    x = np.zeros((1, 2, 4, 5), np.float32)
    graph = check_torch_op(nn.ZeroPad2d((1, 2, 0, 1)), x, target=target, **EXACT)
    emit_keras(graph, tmp_path)
    assert "layers.ZeroPadding2D(((0, 1), (1, 2)), data_format='channels_first'" in \
        (tmp_path / "model.py").read_text()


def test_all_zero_pads_add_no_node(target):
    graph = check_torch_op(lambda x: F.pad(x, (0, 0, 0, 0)), np.ones((1, 2, 3), np.float32), target=target, **EXACT)
    assert graph.nodes == ()


@pytest.mark.parametrize("flat, rank, want", [
    ([1, 2], 3, ((0, 0), (0, 0), (1, 2))),
    ([1, 2, 3, 4], 4, ((0, 0), (0, 0), (3, 4), (1, 2))),
    ([0, 0, 0, 0, 5, 6], 3, ((5, 6), (0, 0), (0, 0))),
])
def test_torch_pads_lists_last_dim_first(flat, rank, want):
    assert torch_pads(flat, rank) == want


@pytest.mark.parametrize("pads, mode", [(((0, 0), (3, 0)), "reflect"), (((0, 0), (0, 4)), "wrap"),
                                        (((0, 0), (-2, -2)), "constant"), (((0, 0), (-3, 1)), "edge")])
def test_pad_shape_rule_rejects_pads_torch_rejects(pads, mode):
    from portx.ir import TensorType

    with pytest.raises(ValueError, match="does not fit"):
        PAD.infer_rule(TensorType((1, 3), "float32"), pads=pads, mode=mode, value=0.0)


def test_pad_shape_rule_allows_unpadded_empty_axis():
    from portx.ir import TensorType

    got = PAD.infer_rule(TensorType((2, 3), "float32"), pads=((1, 0), (-3, 0)), mode="reflect", value=0.0)
    assert got.shape == (3, 0)


@st.composite
def _pads(draw):
    rank = draw(st.integers(3, 4))
    shape = tuple(draw(st.lists(st.integers(3, 4), min_size=rank, max_size=rank)))
    mode = draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    padded = rank - 2 if mode != "constant" else draw(st.integers(1, rank))
    flat = []
    for size in reversed(shape[rank - padded:]):
        lo = draw(st.integers(-1, min(size - 2, 2)))  # keeps the cropped axis wide enough to reflect
        hi = draw(st.integers(-1, min(size - 2, 2)))
        flat += [lo, hi]
    return shape, tuple(flat), mode


@given(_pads())
def test_pad_property(target, case):
    shape, flat, mode = case
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    check_torch_op(lambda t: F.pad(t, flat, mode=mode) * 1, x, target=target, **EXACT)
