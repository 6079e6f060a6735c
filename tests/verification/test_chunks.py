"""Rows that mix pin the batch with a warning that names the node at fault (Note [which node mixes rows] in
verification/chunks.py): static programs (a ``.pt2`` exported without Dims, its batch freed by the ops' shape
rules, Note [static batch]) whose rows mix by a reshape across rows, batch statistics, a sort or a running sum
along axis 0, or a matmul of rows with rows; on both targets, in the console's warning and ``report.json``.
"""
import json

import pytest
import torch
from torch import nn

import portx
from portx.ir import SymDim
from portx.ir.text import parse_graph
from portx.verification.chunks import mixing_node

TARGETS = ["keras-jax", "torch-xla"]


class Mixes(nn.Module):
    """One way rows mix, behind a linear layer so the program is a model, not one op."""

    def __init__(self, how):
        super().__init__()
        self.how, self.lin = how, nn.Linear(8, 8)

    def forward(self, x):
        x = self.lin(x)
        if self.how == "reshape":  # (b, 8) -> (8, b) -> (b, 8): each row now holds a column of all rows
            return x.t().reshape(x.shape[0], 8) * 2
        if self.how == "statistics":
            return x - x.mean(0, keepdim=True)
        if self.how == "sort":
            return torch.sort(x, dim=0).values + 1
        if self.how == "cumsum":
            return torch.cumsum(x, dim=0) * 2
        return x @ x.t()  # rows with rows


PATTERNS = {"reshape": "node reshape (reshape)", "statistics": "node mean (mean)", "sort": "node sort (sort)",
            "cumsum": "node cumsum (cumsum)", "matmul": "(matmul) mixes rows: its output pairs rows with rows"}


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("how", PATTERNS)
def test_a_static_program_whose_rows_mix_names_the_node_that_mixes_them(how, to, tmp_path):
    torch.manual_seed(0)
    program = torch.export.export(Mixes(how).eval(), (torch.randn(2, 8),))
    torch.export.save(program, tmp_path / "m.pt2")
    result = portx.convert(str(tmp_path / "m.pt2"), to=to, grad=False, out=tmp_path / "o")
    batch = next(row for row in result.report["dynamic"] if row["symbol"] == "batch")
    assert not batch["free"] and result.report["verification"]["passed"]
    said = next(w for w in result.report["warnings"] if w.startswith("batch pinned"))
    assert said.startswith("batch pinned at 2: node ") and PATTERNS[how] in said and " mixes rows: " in said, said
    assert "the source run on chunks of 2 rows differs from the converted model" in said
    assert said in json.loads((tmp_path / "o" / "report.json").read_text())["warnings"]


@pytest.mark.parametrize("to", TARGETS)
def test_an_onnx_file_with_fixed_dims_whose_rows_mix_names_the_node(to, tmp_path):
    pytest.importorskip("onnx")
    torch.manual_seed(0)
    torch.onnx.export(Mixes("statistics").eval(), (torch.randn(2, 8),), tmp_path / "m.onnx", dynamo=False,
                      opset_version=17)
    result = portx.convert(str(tmp_path / "m.onnx"), to=to, grad=False)
    said = next(w for w in result.report["warnings"] if w.startswith("batch pinned"))
    assert said.startswith("batch pinned at 2: node /ReduceMean (mean) mixes rows: its output has no batch axis"), said


def _flattened(middle):
    """A mask of batch x seq flattened to one ``batch*seq`` axis (as transformers' masks are, to index them), then
    ``middle`` along it, then back: with the batch free."""
    graph = parse_graph(f"""graph model(%mask: float32[2x8]) {{
      %flat: float32[16] = reshape(%mask) {{shape=(16,)}}
      {middle}
      %y: float32[2x8] = reshape(%run) {{shape=(2, 8)}}
      return %y
    }}""")
    batch, seq = SymDim("batch", size=2), SymDim("batch*seq", size=16)
    return graph.replace(meta={"free": {"dims": {"batch": {"sites": [[0, 0]], "size": 2}}, "values": {
        "mask": {0: batch}, "flat": {0: seq}, "run": {0: seq}, "y": {0: batch}}}})


def test_a_mask_flattened_over_batch_and_sequence_keeps_rows_apart():
    """BART's encoder mask (``mask.reshape(-1)`` indexed by ``b * seq + k``) was named as mixing rows: a row of a
    ``batch*seq`` axis is ``seq`` entries, not its scale of 1 (Note [which node mixes rows])."""
    assert mixing_node(_flattened("%run: float32[16] = abs(%flat) {}")) == ""
    said = mixing_node(_flattened("%run: float32[16] = cumsum(%flat) {axis=0, reverse=False}"))
    assert said.startswith("node run (cumsum) mixes rows: its rows other than the first change"), said
