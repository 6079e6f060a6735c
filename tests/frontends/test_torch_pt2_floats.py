"""``.pt2`` archives whose shape expressions hold a float constant (Note [pt2 threat model] in
frontends/torch/pt2.py): torch.export writes ``Float('1.5', precision=53)`` for an interpolate scale and for
``torch.sym_float(x.shape[1]) / 3.0``. portx reads them (the number is checked as a number), and still refuses a
``Float`` whose argument is anything else.
"""
import zipfile

import numpy as np
import pytest
import torch
from torch import nn
from torch.export import Dim

import portx
from portx.errors import BadInput
from portx.frontends.torch.pt2 import _check_expr
from portx.options import Checks, Output


class Upsample(nn.Module):
    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=1.5, mode="nearest")


class ThirdSlice(nn.Module):
    def forward(self, x):
        return x[:, : torch.sym_int(torch.sym_float(x.shape[1]) / 3.0)] * 2.0


def _save(tmp_path, model, x, dynamic_shapes):
    path = tmp_path / "model.pt2"
    torch.export.save(torch.export.export(model, (x,), dynamic_shapes=dynamic_shapes), path)
    return path


@pytest.mark.parametrize("model, x, dynamic_shapes", [
    (Upsample(), torch.randn(1, 3, 8, 8), {"x": {2: Dim("h", min=2, max=64), 3: Dim("w", min=2, max=64)}}),
    (ThirdSlice(), torch.randn(2, 16), {"x": {1: Dim.DYNAMIC}}),
], ids=["interpolate-scale", "sym-float-div"])
@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_float_in_a_shape_expression_converts(tmp_path, model, x, dynamic_shapes, to):
    path = _save(tmp_path, model, x, dynamic_shapes)
    assert "Float('" in _model_json(path)  # the case this test is about: torch wrote a float constant
    result = portx.convert(str(path), to, checks=Checks(grad=False), output=Output(out=tmp_path / "out"))
    assert result.ok
    got = result.model(x if to == "torch-xla" else x.numpy())  # the source's layout on both targets
    np.testing.assert_allclose(np.asarray(got.detach() if to == "torch-xla" else got), model(x).numpy(), atol=1e-6)


def _model_json(path):
    with zipfile.ZipFile(path) as zf:
        return zf.read(next(n for n in zf.namelist() if n.endswith("models/model.json"))).decode()


@pytest.mark.parametrize("text", ["Float('1.5', precision=53)", "Mul(Float('3.0', precision=53), ToFloat(s0))",
                                  "Float('2.5e-05', precision=53)", "Float('-0.5')"])
def test_a_float_constant_is_a_shape_expression(text):
    assert _check_expr(text, "m.pt2", "expr_str") == text


@pytest.mark.parametrize("text", ["Float(__import__('os').getcwd())", "Float('1.5', precision=open('x'))",
                                  "Float('1.5'.join('ab'))", "Float('nan')", "Float('1.5') + eval('1')",
                                  "Float('1.5', precision=99999999)"])  # mpmath would compute for minutes
def test_a_float_that_is_not_a_number_is_refused(text):
    with pytest.raises(BadInput, match="is not a shape"):
        _check_expr(text, "m.pt2", "expr_str")
