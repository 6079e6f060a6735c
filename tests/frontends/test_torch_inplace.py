"""In-place ops on temporaries import as their functional twins without a re-trace (Note [in-place ops] in
frontends/torch/training.py); every other in-place op is left to torch's decompositions, and all convert right."""
import pytest
import torch
from torch import nn

from portx.frontends.torch import rule_for
from portx.frontends.torch.training import functional_inplace
from tests.support.harness import Wrap, check_torch_op


class Block(nn.Module):
    """torchvision's residual pattern: conv, batch norm, ``ReLU(inplace=True)``, ``out += identity``."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.relu = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn(self.conv(x)))
        out += x
        return self.relu(out)


def _view_read_later(x):
    t = x * 2
    kept = t.view(-1)  # an alias of t, read after t is written
    t.relu_()
    return kept + 1


def _input_written(x):
    y = x * 1
    return y.add_(1).relu_()


def _half_into_float(x):
    t = x.half() * 1
    t.add_(x)  # in place: the float32 sum is cast back to float16
    return t


def _targets(fn, x):
    """{name: has an import rule} of the program's call targets after ``functional_inplace``."""
    ep = torch.export.export(fn if isinstance(fn, nn.Module) else Wrap(fn), (x,))
    functional_inplace(ep, rule_for)
    return {str(n.target): rule_for(n.target) is not None for n in ep.graph.nodes if n.op == "call_function"}


def test_the_residual_block_needs_no_retrace():
    targets = _targets(Block().eval(), torch.randn(2, 3, 8, 8))
    assert {"aten.relu.default", "aten.add.Tensor", "aten.batch_norm.default"} <= set(targets)
    assert not {"aten.relu_.default", "aten.add_.Tensor"} & set(targets)
    assert all(targets.values()), targets  # every op imported as it is: no decomposition re-trace


@pytest.mark.parametrize("fn, kept", [(_view_read_later, "aten.relu_.default"),
                                      (_half_into_float, "aten.add_.Tensor")])
def test_unsafe_in_place_ops_are_left_to_the_decompositions(fn, kept):
    assert kept in _targets(fn, torch.randn(2, 4))


TARGETS = pytest.mark.parametrize("target", ["keras-jax", "torch-xla"])


@TARGETS
@pytest.mark.parametrize("fn", [Block().eval(), _view_read_later, _input_written, _half_into_float],
                         ids=["residual", "view-read-later", "chained", "half-into-float"])
def test_in_place_programs_convert_right(target, fn):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 8) if isinstance(fn, nn.Module) else torch.randn(2, 4)
    check_torch_op(fn if isinstance(fn, nn.Module) else Wrap(fn), x, target=target, atol=1e-3, rtol=1e-3)


@TARGETS
def test_batch_norm_in_training_mode_uses_the_batch_statistics(target):
    torch.manual_seed(0)
    check_torch_op(lambda x: nn.functional.batch_norm(x, torch.zeros(3), torch.ones(3), training=True),
                   torch.randn(4, 3, 5), target=target, expect_ops=["batch_norm"])
