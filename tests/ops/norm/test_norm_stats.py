"""Norms with statistics outputs (native_layer_norm, native_group_norm, batch norm with batch statistics and
updated running statistics): every output against torch, on both targets."""
import pytest
import torch
import torch.nn.functional as F

from tests.support.harness import check_torch_op, lower_torch

TOL = {"atol": 1e-5, "rtol": 1e-4}
aten = torch.ops.aten


def _functional(x, w, b, rm, rv):
    return aten._native_batch_norm_legit_functional(x, w, b, rm, rv, True, 0.3, 1e-3)


def _with_update(x, w, b, rm, rv):
    out = aten._batch_norm_with_update_functional(x, w, b, rm, rv, 0.2, 1e-4)
    return out[0], out[1], out[2], out[4], out[5]  # out[3] is torch's empty cuDNN workspace


NORM = [(4, 3, 5), (3,), (3,), (3,), (3,)]
# (function, input shapes, IR ops expected)
CASES = [
    pytest.param(lambda x, w, b: aten.native_layer_norm(x, [5], w, b, 1e-5), [(2, 3, 5), (5,), (5,)],
                 ["layer_norm", "mean", "var", "rsqrt"], id="native-layer-norm"),
    pytest.param(lambda x: aten.native_layer_norm(x, [3, 4], None, None, 0.5), [(2, 3, 4)],
                 ["layer_norm", "mean"], id="native-layer-norm-two-axes-no-affine"),
    pytest.param(lambda x: aten.native_layer_norm(x, [4], None, None, 1e-5)[0], [(2, 4)], ["layer_norm"],
                 id="native-layer-norm-output-only"),
    pytest.param(lambda x, w, b: aten.native_group_norm(x, w, b, 2, 6, 12, 3, 1e-5), [(2, 6, 3, 4), (6,), (6,)],
                 ["group_norm", "mean", "var"], id="native-group-norm"),
    pytest.param(lambda x: aten.native_group_norm(x, None, None, 1, 4, 3, 1, 0.5), [(1, 4, 3)],
                 ["group_norm"], id="native-group-norm-one-group"),
    pytest.param(_functional, NORM, ["batch_norm", "mean", "var"], id="batch-norm-functional"),
    pytest.param(_with_update, NORM, ["batch_norm", "mean", "var"], id="batch-norm-with-update"),
    pytest.param(lambda x, w, b: aten._native_batch_norm_legit(x, w, b, True, 0.1, 1e-5), [(5, 2, 3, 3), (2,), (2,)],
                 ["batch_norm", "rsqrt"], id="batch-norm-no-stats"),
    pytest.param(lambda x: aten._native_batch_norm_legit(x, None, None, True, 0.1, 1e-5)[0], [(6, 2)],
                 ["batch_norm"], id="batch-norm-no-stats-output-only"),
    pytest.param(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=0.1), [(4, 3, 2), (3,), (3,)],
                 ["batch_norm"], id="batch-norm-training-without-running-stats"),
    pytest.param(lambda x, w, b, rm, rv: aten._native_batch_norm_legit_functional(x, w, b, rm, rv, False, 0.1,
                                                                                  1e-5)[0::3],
                 NORM, ["batch_norm"], id="batch-norm-functional-eval"),
]


@pytest.mark.parametrize("fn, shapes, ops", CASES)
def test_norm_statistics_case(target, fn, shapes, ops):
    torch.manual_seed(0)
    inputs = [torch.randn(s) * 2 + 1 for s in shapes]
    if len(shapes) == 5:
        inputs[4] = inputs[4].abs() + 0.5  # a running variance is positive
    check_torch_op(fn, *inputs, expect_ops=ops, target=target, **TOL)


def test_statistics_are_built_only_when_read():
    graph = lower_torch(lambda x: aten.native_layer_norm(x, [4], None, None, 1e-5)[0], torch.randn(2, 4))[0]
    assert [n.op.name for n in graph.nodes] == ["layer_norm"]
