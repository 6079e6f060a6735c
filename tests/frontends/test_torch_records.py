"""The recorded-type checks of the torch frontend (frontends/torch/records.py) on a symbolic export: they run in
error paths and must neither raise on a SymInt nor add a guard to the program's ShapeEnv (Note [no guards from
records])."""
import torch
from torch import nn

from portx.frontends.torch.records import describe, first_stale, recomputed, recorded, refused_for_real, type_error
from portx.ir import IRError


class Sums(nn.Module):
    def forward(self, x):
        return (x * 2).sum(0) + x.shape[0]


def test_records_of_a_symbolic_export_are_read_without_guarding_its_sizes():
    batch = torch.export.Dim("batch", min=2, max=64)
    program = torch.export.export(Sums(), (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
    placeholder = next(n for n in program.graph.nodes if n.op == "placeholder")
    symbol = str(placeholder.meta["val"].shape[0])
    shape_env = placeholder.meta["val"].fake_mode.shape_env
    guards = len(shape_env.guards)
    for node in (n for n in program.graph.nodes if n.op == "call_function"):
        assert recomputed(node) is None or symbol not in str(recorded(node))  # symbolic inputs: not recomputed
        assert refused_for_real(node) is None and first_stale(node) is None
        error = type_error(node, lambda n: n.name, "(9, 9)", recorded(node))
        assert isinstance(error, IRError) and node.name in str(error)
    mul = next(n for n in program.graph.nodes if n.op == "call_function" and "mul" in str(n.target))
    assert recorded(mul) == [((symbol, 4), torch.float32)] and describe(recorded(mul)) == f"float32 ({symbol}, 4)"
    assert len(shape_env.guards) == guards, shape_env.guards[guards:]  # int() of a SymInt would add Eq(s, 3)
    assert str(program.range_constraints[placeholder.meta["val"].shape[0].node.expr]) == "VR[2, 64]"
