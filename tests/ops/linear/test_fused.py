"""Fused products: F.bilinear (aten::_trilinear as two einsums) and the chunked F.linear_cross_entropy (linear,
log_softmax and a gather): torch -> IR -> NumPy reference and both targets' emitted models."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.support.harness import Wrap, check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}
aten = torch.ops.aten


class _ChunkedLoss(nn.Module):
    """F.linear_cross_entropy with batch chunks (torch's ``torch_nn`` chunked ops) over fixed targets."""

    def __init__(self, targets, classes, reduction, weight=False, bias=False, ignore_index=-100):
        super().__init__()
        self.register_buffer("targets", torch.tensor(targets))
        gen = torch.Generator().manual_seed(3)
        self.weight = nn.Parameter(torch.rand(classes, generator=gen) + 0.5) if weight else None
        self.bias = nn.Parameter(torch.randn(classes, generator=gen)) if bias else None
        self.reduction, self.ignore_index = reduction, ignore_index

    def forward(self, x, linear_weight):
        options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
        return F.linear_cross_entropy(x, linear_weight, self.targets, linear_bias=self.bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index, options=options)


# (function or module, input shapes, IR ops expected)
CASES = [
    pytest.param(nn.Bilinear(3, 4, 5), [(2, 3), (2, 4)], ["matmul"], id="bilinear-module"),
    pytest.param(nn.Bilinear(2, 2, 3, bias=False), [(4, 3, 2), (4, 3, 2)], ["matmul"], id="bilinear-batch-dims"),
    pytest.param(lambda a, b, w: F.bilinear(a, b, w), [(3,), (4,), (5, 3, 4)], ["matmul"], id="bilinear-unbatched"),
    pytest.param(lambda a, b, c: aten._trilinear(a, b, c, [2], [0], [1], [1, 2]), [(2, 3), (3, 4), (2, 4)],
                 ["matmul"], id="trilinear-chain"),
    pytest.param(lambda a, b, c: aten._trilinear(a, b, c, [], [], [], [0]), [(3, 2), (3, 2), (3, 2)],
                 ["matmul"], id="trilinear-elementwise-sum"),
    pytest.param(lambda a, b, c: aten._trilinear(a, b, c, [1], [0], [0], []), [(4, 3), (5, 3), (5, 3)],
                 ["matmul"], id="trilinear-outer-no-sum"),
    pytest.param(_ChunkedLoss([0, 2, 1, 3, 2], 4, "mean"), [(5, 3), (4, 3)], ["linear", "log_softmax", "gather"],
                 id="linear-ce-mean"),
    pytest.param(_ChunkedLoss([0, 2, 1], 4, "sum", weight=True), [(3, 6), (4, 6)], ["index_select"],
                 id="linear-ce-sum-class-weights"),
    pytest.param(_ChunkedLoss([1, 3, 0, 3], 4, "none", bias=True, ignore_index=3), [(4, 3), (4, 3)], ["where"],
                 id="linear-ce-none-bias-ignore-index"),
    pytest.param(_ChunkedLoss([1, 2, 2], 3, "mean", weight=True, ignore_index=2), [(3, 2), (3, 2)], ["div"],
                 id="linear-ce-mean-weights-ignore-index"),
]


@pytest.mark.parametrize("fn, shapes, ops", CASES)
def test_fused_case(target, fn, shapes, ops):
    torch.manual_seed(0)
    inputs = [torch.randn(s) for s in shapes]
    check_torch_op(fn if isinstance(fn, nn.Module) else Wrap(fn), *inputs, expect_ops=ops, target=target, **TOL)
