"""Emit-time ``Unsupported`` (Note [emit-time unsupported]): every node a target cannot write, in one error, exit 3."""
import pytest
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main
from portx.errors import Unsupported, UnsupportedOps
from portx.ops.elementwise.unary import UNARY


class TwoActs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act1, self.fc2, self.act2 = nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU()
        self.gate = nn.Sigmoid()

    def forward(self, x):
        return self.gate(self.act2(self.fc2(self.act1(self.fc1(x)))))


def _refuse(reason):
    def rule(node, emitter):
        raise Unsupported(reason)
    return rule


@pytest.mark.parametrize("target", ["keras-jax", "torch-xla"])
def test_every_refused_node_is_listed_once(tmp_path, monkeypatch, target):
    monkeypatch.setitem(UNARY["relu"].emit_rules, target, _refuse("relu variant"))
    monkeypatch.setitem(UNARY["sigmoid"].emit_rules, target, _refuse("sigmoid variant"))
    with pytest.raises(UnsupportedOps) as info:
        portx.convert(TwoActs(), example_inputs=(torch.randn(2, 4),), to=target, out=tmp_path / "out",
                      verify=False)
    assert info.value.exit_code == 3
    assert [(op, scopes, reason) for op, scopes, reason in info.value.items] == [
        ("relu", ["act1", "act2"], "relu variant"), ("sigmoid", ["gate"], "sigmoid variant")]
    assert f"target {target}: 2 unsupported ops: relu at act1, act2 (x2) [relu variant]" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_the_cli_exits_3_with_one_line(tmp_path, monkeypatch):
    model, x = TwoActs().eval(), torch.randn(2, 4)
    torch.export.save(torch.export.export(model, (x,)), tmp_path / "m.pt2")
    monkeypatch.setitem(UNARY["sigmoid"].emit_rules, "keras-jax", _refuse("no such layer"))
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "m.pt2"), "-o", str(tmp_path / "out")])
    assert run.exit_code == 3, run.output
    assert "1 unsupported op: sigmoid at gate [no such layer]" in run.output and "bug" not in run.output


def test_an_op_without_a_rule_is_listed_with_the_refused_ones(tmp_path, monkeypatch):
    monkeypatch.delitem(UNARY["relu"].emit_rules, "torch-xla")
    monkeypatch.setitem(UNARY["sigmoid"].emit_rules, "torch-xla", _refuse("sigmoid variant"))
    with pytest.raises(UnsupportedOps, match=r"relu at act1, act2 \(x2\) \[no torch-xla emitter\]; "
                                             r"sigmoid at gate \[sigmoid variant\]"):
        portx.convert(TwoActs(), example_inputs=(torch.randn(2, 4),), to="torch-xla", out=tmp_path / "out")
