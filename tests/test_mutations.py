"""The family tests catch a broken torch-xla emit rule, each mutation in more than one case (issue 20).

Each mutation below breaks one of portx's own torch-xla emit rules in-process (monkeypatch; no
framework is touched). A handful of rows from the real family table (``CASES`` in
tests/ops/<family>/test_<family>.py) then run through the real family test function on the torch-xla
target, first unmutated (they must pass) and then mutated; at least two of them must fail. The full
family files catch more (counts in the issue's closing note).
"""
from dataclasses import dataclass

import pytest

from portx.ops.conv import CONV
from portx.ops.linear import LINEAR
from portx.ops.norm import to_torch as norm_torch
from portx.ops.shape import PERMUTE
from tests.ops.conv import test_conv as conv_tests
from tests.ops.linear import test_linear as linear_tests
from tests.ops.norm import test_norm as norm_tests
from tests.ops.shape import test_shape as shape_tests

TARGET = "torch-xla"


def _wrap_rule(monkeypatch, op, change):
    """Replace ``op``'s torch-xla rule by one that emits ``change(node)`` instead of ``node``."""
    rule = op.emit_rules[TARGET]
    monkeypatch.setitem(op.emit_rules, TARGET, lambda node, t: rule(change(node), t))


def drop_norm_eps(monkeypatch):
    """nn.BatchNorm/LayerNorm/GroupNorm written without eps=...: torch's default 1e-5 replaces the node's."""
    monkeypatch.setattr(norm_torch, "_eps", lambda t, eps: {})


def swap_permute_axes(monkeypatch):
    """x.permute(...) with its last two axes swapped."""
    def swapped(node):
        perm = list(node.attrs["perm"])
        perm[-2:] = perm[:-3:-1]
        return node.replace(attrs={**node.attrs, "perm": tuple(perm)})
    _wrap_rule(monkeypatch, PERMUTE, swapped)


def drop_linear_bias(monkeypatch):
    """nn.Linear / F.linear written without the bias."""
    _wrap_rule(monkeypatch, LINEAR, lambda node: node.replace(inputs=node.inputs[:2]))


def drop_conv_bias(monkeypatch):
    """nn.ConvNd / F.convNd written without the bias."""
    _wrap_rule(monkeypatch, CONV, lambda node: node.replace(inputs=node.inputs[:2]))


@dataclass(frozen=True)
class Mutation:
    """A broken rule, the family test module and function that should notice, and the table rows to run it on."""

    apply: object
    family: object
    test: str
    cases: tuple


MUTATIONS = {
    "norm-drops-eps": Mutation(drop_norm_eps, norm_tests, "test_norm_case",
                               ("bn2d-eps", "ln-eps", "gn-eps", "instance-norm-eps")),
    "permute-swaps-axes": Mutation(swap_permute_axes, shape_tests, "test_shape_op_matches_torch",
                                   ("permute", "transpose-negative", "mT", "movedim")),
    "linear-drops-bias": Mutation(drop_linear_bias, linear_tests, "test_linear_case",
                                  ("linear-rank2", "linear-rank3", "linear-input-weight-bias")),
    "conv-drops-bias": Mutation(drop_conv_bias, conv_tests, "test_conv_case",
                                ("conv1d", "conv2d", "conv1d-computed-weight-bias-groups")),
}


def _fails(test, values) -> bool:
    try:
        test(TARGET, *values)
    except Exception:  # noqa: BLE001  (a crash in the emitted module counts as caught, as in the real tests)
        return True
    return False


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_is_caught_by_more_than_one_case(name, monkeypatch):
    mutation = MUTATIONS[name]
    module = mutation.family
    test, rows = getattr(module, mutation.test), {row.id: row.values for row in module.CASES}
    broken = [case for case in mutation.cases if _fails(test, rows[case])]
    assert not broken, f"{module.__name__}: {broken} fail before the mutation"
    mutation.apply(monkeypatch)
    caught = [case for case in mutation.cases if _fails(test, rows[case])]
    assert len(caught) >= 2, f"{name}: only {caught} of {list(mutation.cases)} fail in {mutation.test}"
