"""batch_norm, layer_norm, group_norm, rms_norm: torch -> IR -> NumPy reference and both targets' emitted models."""
import tempfile

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from portx.targets.keras_jax.emitter import emit_keras
from portx.errors import UnsupportedOps
from portx.frontends.torch import export_module, lower_exported
from tests.support.harness import check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}


def _randomized(module):
    """Seeded non-trivial affine parameters and running statistics, so a swapped weight shows."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if tensor.is_floating_point():
                values = torch.rand(tensor.shape, generator=gen) + 0.5
                tensor.copy_(values if "var" in name else values * 2 - 2)
    return module


def _mod(cls, *args, **kwargs):
    return lambda: _randomized(cls(*args, **kwargs))


def _fn(fn):
    return lambda: fn


# (module factory, input shapes, IR op expected); inputs are seeded normal floats (+1 offset).
# The eps rows use an eps large enough against the unit variance to move the result beyond rtol.
CASES = [
    pytest.param(_mod(nn.BatchNorm1d, 4), [(3, 4)], "batch_norm", id="bn1d-NC"),
    pytest.param(_mod(nn.BatchNorm1d, 4), [(2, 4, 5)], "batch_norm", id="bn1d-NCL"),
    pytest.param(_mod(nn.BatchNorm2d, 3), [(2, 3, 4, 5)], "batch_norm", id="bn2d"),
    pytest.param(_mod(nn.BatchNorm2d, 3, eps=1e-3), [(1, 3, 4, 4)], "batch_norm", id="bn2d-eps"),
    pytest.param(_mod(nn.BatchNorm1d, 4, eps=0.1), [(2, 4, 5)], "batch_norm", id="bn1d-eps-large"),
    pytest.param(_mod(nn.BatchNorm2d, 3, affine=False), [(2, 3, 4, 4)], "batch_norm", id="bn2d-no-affine"),
    pytest.param(_mod(nn.BatchNorm2d, 3, track_running_stats=False), [(2, 3, 4, 4)], "batch_norm",
                 id="bn2d-batch-statistics"),
    pytest.param(_mod(nn.BatchNorm1d, 3, affine=False, track_running_stats=False), [(5, 3)], "batch_norm",
                 id="bn1d-batch-statistics-no-affine"),
    pytest.param(_mod(nn.BatchNorm3d, 2), [(1, 2, 3, 4, 4)], "batch_norm", id="bn3d"),
    pytest.param(_fn(lambda x, w: F.batch_norm(x, torch.zeros(3), torch.ones(3), w * 2, None, False)),
                 [(2, 3, 4), (3,)], "batch_norm", id="bn-computed-weight-no-bias"),
    pytest.param(_mod(nn.LayerNorm, 6), [(2, 5, 6)], "layer_norm", id="ln-last"),
    pytest.param(_mod(nn.LayerNorm, (4, 5)), [(2, 3, 4, 5)], "layer_norm", id="ln-two-axes"),
    pytest.param(_mod(nn.LayerNorm, (3, 4, 5)), [(2, 3, 4, 5)], "layer_norm", id="ln-all-but-batch"),
    pytest.param(_mod(nn.LayerNorm, 6, elementwise_affine=False), [(2, 6)], "layer_norm", id="ln-no-affine"),
    pytest.param(_mod(nn.LayerNorm, 6, bias=False, eps=1e-6), [(2, 3, 6)], "layer_norm", id="ln-no-bias"),
    pytest.param(_mod(nn.LayerNorm, 6, eps=1e-2), [(2, 5, 6)], "layer_norm", id="ln-eps"),
    pytest.param(_fn(lambda x, w: F.layer_norm(x, (6,), w + 1, -w)), [(2, 6), (6,)], "layer_norm",
                 id="ln-computed-weight"),
    pytest.param(_mod(nn.GroupNorm, 2, 6), [(2, 6, 4, 4)], "group_norm", id="gn2d"),
    pytest.param(_mod(nn.GroupNorm, 3, 6), [(2, 6, 7)], "group_norm", id="gn1d"),
    pytest.param(_mod(nn.GroupNorm, 1, 4), [(2, 4, 3, 3)], "group_norm", id="gn-one-group"),
    pytest.param(_mod(nn.GroupNorm, 4, 4, affine=False), [(2, 4, 3, 3)], "group_norm", id="gn-no-affine"),
    pytest.param(_mod(nn.GroupNorm, 2, 4), [(3, 4)], "group_norm", id="gn-NC"),
    pytest.param(_mod(nn.GroupNorm, 2, 6, eps=1e-2), [(2, 6, 4, 4)], "group_norm", id="gn-eps"),
    pytest.param(_fn(lambda x, w: F.group_norm(x, 2, w * 3, w)), [(2, 4, 5), (4,)], "group_norm",
                 id="gn-computed-weight"),
    pytest.param(_mod(nn.InstanceNorm2d, 3), [(2, 3, 4, 4)], "group_norm", id="instance-norm"),
    pytest.param(_mod(nn.InstanceNorm1d, 3, affine=True), [(2, 3, 6)], "group_norm", id="instance-norm-affine"),
    pytest.param(_mod(nn.InstanceNorm1d, 3), [(3, 6)], "group_norm", id="instance-norm-unbatched"),
    pytest.param(_mod(nn.InstanceNorm2d, 3, eps=1e-3, affine=True), [(2, 3, 4, 4)], "group_norm",
                 id="instance-norm-eps"),
    pytest.param(_mod(nn.InstanceNorm2d, 3, affine=True, track_running_stats=True), [(2, 3, 4, 4)], "batch_norm",
                 id="instance-norm-running-stats"),
    pytest.param(_mod(nn.RMSNorm, 6), [(2, 5, 6)], "rms_norm", id="rms-last"),
    pytest.param(_mod(nn.RMSNorm, (4, 6), eps=1e-5), [(2, 4, 6)], "rms_norm", id="rms-two-axes"),
    pytest.param(_mod(nn.RMSNorm, 6, elementwise_affine=False), [(3, 6)], "rms_norm", id="rms-no-affine"),
]


@pytest.mark.parametrize("make, shapes, op", CASES)
def test_norm_case(target, make, shapes, op):
    torch.manual_seed(0)
    inputs = [torch.randn(s) + 1.0 for s in shapes]
    check_torch_op(make(), *inputs, expect_ops=[op], target=target, **TOL)


def _keras_configs(module, x):
    graph = lower_exported(export_module(module, [x]))
    with tempfile.TemporaryDirectory() as tmp:
        model = emit_keras(graph, tmp)["model"]
    return {type(layer).__name__: layer.get_config() for layer in model.layers}


def test_batch_norm_is_one_keras_layer_over_channels():
    configs = _keras_configs(_randomized(nn.BatchNorm2d(3, affine=False, eps=1e-3)), torch.randn(1, 3, 4, 4))
    bn = configs["BatchNormalization"]
    assert (bn["axis"], bn["epsilon"], bn["center"], bn["scale"]) == (1, 1e-3, False, False)


def test_reading_batch_norm_saved_statistics_is_reported():
    # Output 1 of _native_batch_norm_legit_no_training is torch's empty saved mean (Note [unused outputs]).
    class SavedMean(nn.Module):
        def forward(self, x):
            out = torch.ops.aten._native_batch_norm_legit_no_training(x, None, None, torch.zeros(3),
                                                                      torch.ones(3), 0.1, 1e-5)
            return out[0], out[1]

    with pytest.raises(UnsupportedOps, match="_native_batch_norm_legit_no_training"):
        lower_exported(export_module(SavedMean(), [torch.randn(2, 3)]))


@given(st.sampled_from(["batch", "layer", "group", "rms"]), st.integers(1, 3), st.integers(1, 3),
       st.sampled_from([1e-5, 1e-3, 0.1]), st.booleans())
def test_norm_property(target, kind, groups, per_group, eps, affine):
    torch.manual_seed(0)
    channels = groups * per_group
    x = torch.randn(2, channels, 3) * 3 + 2
    module = {"batch": lambda: nn.BatchNorm1d(channels, eps=eps, affine=affine),
              "layer": lambda: nn.LayerNorm((channels, 3), eps=eps, elementwise_affine=affine),
              "group": lambda: nn.GroupNorm(groups, channels, eps=eps, affine=affine),
              "rms": lambda: nn.RMSNorm(3, eps=eps, elementwise_affine=affine)}[kind]()
    graph = check_torch_op(_randomized(module), x, target=target, **TOL)
    assert [n.op.name for n in graph.nodes] == [f"{kind}_norm"]
