"""#30's bad input, through the command line and the API on both targets: a dim the user frees that the model
fixes, a ``--dynamic`` axis that does not exist, an ONNX ``dim_param`` the graph contradicts. One line and exit 2
(BadInput through the API), or a warning where portx can pin the dim (Note [contradicted dim_param] in
frontends/onnx/source.py); never exit 70, never a traceback, no OUT written on an error.
"""
import json

import numpy as np
import onnx
import pytest
import torch
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper
from torch import nn

import portx
from portx.cli import main
from portx.errors import BadInput

TARGETS = ["keras-jax", "torch-xla"]


class Linear(nn.Module):
    """Axis 1 is fixed by a weight (8 input features)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(x).relu()


class Rows(nn.Module):
    """Axis 1 is fixed by a reshape to constants."""

    def forward(self, x):
        return x.reshape(2, 2, 4).sum(1)


def _x():
    return torch.randn(2, 8, generator=torch.Generator().manual_seed(0))


def _files(folder):
    """The Linear model as a .pt2 without Dims and an ONNX file with fixed dims; and an ONNX file whose input
    declares ``["N", 8]`` while the graph reshapes it to a constant (4, 4) (so N is 2)."""
    torch.manual_seed(0)
    model = Linear().eval()
    torch.export.save(torch.export.export(model, (_x(),)), folder / "lin.pt2")
    torch.onnx.export(model, (_x(),), folder / "lin.onnx", dynamo=False, opset_version=17, input_names=["x"])
    graph = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])],
                              [numpy_helper.from_array(np.array([4, 4], np.int64), "s")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), folder / "n.onnx")


def _cli(*args):
    return CliRunner().invoke(main, ["convert", *map(str, args)])


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("name, flags, says", [
    ("lin.pt2", ["--dynamic", "x:1"], "--dynamic x_1: the model does not run at x_1="),
    ("lin.pt2", ["--dynamic", "x:5"], "--dynamic x:5: input x has 2 axes"),
    ("lin.onnx", ["--dynamic", "x:1"], "--dynamic x_1: the model does not run at x_1=9 ("),
    ("lin.onnx", ["--dynamic", "x:4"], "--dynamic x:4: input x has 2 axes"),
    ("n.onnx", ["--input", "x:3x8"], "n.onnx: the graph does not run at input shapes [(3, 8)]: node Reshape_0"),
])
def test_bad_free_dims_through_the_cli_are_one_line_and_exit_2(tmp_path, to, name, flags, says):
    _files(tmp_path)
    out = tmp_path / "o"
    done = _cli(tmp_path / name, "--to", to, "-o", out, "--no-grad", *flags)
    assert done.exit_code == 2 and says in done.output, done.output
    said = [line for line in done.output.splitlines() if line.startswith("portx:")]  # besides the stage times
    assert len(said) == 1 and says in said[0] and "Traceback" not in done.output and not out.exists()


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("model, dynamic, says", [
    (Linear, "x:1", "--dynamic x_1: torch.export specialised it to 8"),
    (Rows, "x:1", "--dynamic x_1: the model does not run at x_1="),
    (Linear, "x:5", "--dynamic x:5: input x has 2 axes"),
])
def test_bad_free_dims_through_the_api_raise_bad_input(tmp_path, to, model, dynamic, says):
    with pytest.raises(BadInput) as caught:
        portx.convert(model().eval(), example_inputs=(_x(),), to=to, dynamic=[dynamic], grad=False,
                      out=tmp_path / "o")
    assert says in str(caught.value) and "\n" not in str(caught.value) and caught.value.exit_code == 2
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("to", TARGETS)
def test_a_dim_param_a_node_contradicts_is_pinned_with_a_warning(tmp_path, to):
    """Note [contradicted dim_param]: ONNX shape inference takes N=1 into a Reshape to (4, 4); portx's own shape
    rule does not, and the size the graph runs at (2) is found and taken with a warning."""
    _files(tmp_path)
    done = _cli(tmp_path / "n.onnx", "--to", to, "-o", tmp_path / "o", "--no-grad")
    assert done.exit_code == 0, done.output
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["inputs"][0][1] == [2, 8] and report["verification"]["passed"]
    assert any("declares axis 0 ('N') free, but the graph fixes it to 2" in w for w in report["warnings"]), report
    result = portx.convert(str(tmp_path / "n.onnx"), to=to, grad=False)  # the API: the same warning, no error
    assert [w for w in result.report["warnings"] if "('N')" in w] == [w for w in report["warnings"] if "('N')" in w]
