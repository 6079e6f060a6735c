"""TPU legalization end to end: rewrites in the keras-jax pipeline, 64-bit narrowing with warnings,
and data-dependent ops refused with every scope named."""
import json

import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main
from portx.errors import NotTpuLegal, UnsupportedOps
from tests.support.zoo import ZOO


def test_unet_upsampling_is_rewritten_and_lowers_for_tpu_without_float64(tmp_path):
    model, inputs = ZOO["unet"]()
    result = portx.convert(model, example_inputs=inputs, out=tmp_path / "out")
    report = result.report
    assert report["verification"]["passed"], report["verification"]
    assert "resize" not in report["ops"]  # bilinear -> matmuls, nearest x2 -> reshape/expand/reshape
    assert {"matmul", "expand"} <= set(report["ops"])
    assert report["tpu"]["verdict"] == "ok", report["tpu"]
    assert not any("float64" in p for p in report["tpu"]["problems"])
    assert "float64" not in result.files["code"].read_text()


class Mixed(nn.Module):
    """float64 weights behind casts, and an int64 index path (ids + arange arithmetic)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.proj = nn.Linear(8, 8).double()
        self.head = nn.Linear(8, 4)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        h = self.emb(torch.clamp(ids + pos * 3, 0, 49))
        return self.head(self.proj(h.double()).float())


def test_float64_weights_and_int64_indices_convert_with_warnings_and_lower(tmp_path):
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (2, 6))
    result = portx.convert(Mixed().eval(), example_inputs=(ids,), out=tmp_path / "out")
    notes = result.report["warnings"]
    assert any(n.startswith("float64 -> float32") and "proj" in n for n in notes), notes
    assert any("inputs ids: int64 -> int32" in n for n in notes), notes
    assert any(n.startswith("int64 -> int32") and "emb" in n and "add" in n for n in notes), notes
    assert result.report["verification"]["passed"]
    assert result.report["tpu"]["verdict"] == "ok", result.report["tpu"]
    dtypes = {v.type.dtype for n in result.graph.nodes for v in n.outputs} | {
        a.dtype.name for a in result.graph.params.values()}
    assert not dtypes & {"float64", "int64"}, dtypes


class Head(nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0).float().sum() + x.sum()


class DataDependent(nn.Module):
    """nonzero at two scopes and boolean-mask indexing at the top."""

    def __init__(self):
        super().__init__()
        self.pick = Head()
        self.post = nn.Sequential(nn.Identity(), Head())

    def forward(self, x):
        return self.pick(x) + self.post(x) + x[x > 0.5].sum()


_SCOPES = ("aten::nonzero at pick", "aten::nonzero at post.1", "aten::index at <top>")


@pytest.mark.parametrize("strict, error", [(True, NotTpuLegal), (False, UnsupportedOps)])
def test_data_dependent_ops_are_refused_with_every_scope(strict, error, tmp_path):
    with pytest.raises(error) as info:
        portx.convert(DataDependent(), example_inputs=(torch.randn(2, 3),), strict_tpu=strict,
                      out=tmp_path / "out")
    message = str(info.value)
    assert all(s in message for s in _SCOPES), message
    assert "torch.nonzero_static" in message and "torch.where(mask, x, 0)" in message
    assert len(info.value.items) == 3
    assert not (tmp_path / "out").exists()


def test_strict_tpu_cli_exits_4_naming_every_scope(tmp_path):
    path = tmp_path / "dd.pt2"
    torch.export.save(torch.export.export(DataDependent().eval(), (torch.randn(2, 3),), strict=False), path)
    runner = CliRunner()
    strict = runner.invoke(main, ["convert", str(path), "-o", str(tmp_path / "a"), "--strict-tpu"])
    assert strict.exit_code == 4, strict.output
    assert all(s in strict.output for s in _SCOPES), strict.output
    loose = runner.invoke(main, ["convert", str(path), "-o", str(tmp_path / "b")])
    assert loose.exit_code == 3, loose.output
    assert "aten::nonzero at post.1" in loose.output


def test_item_is_a_host_sync():
    class Scalar(nn.Module):
        def forward(self, x):
            return x * x.max().item()

    with pytest.raises(UnsupportedOps, match=r"aten::item at <top> \[host sync; keep the value as a 0-d tensor"):
        portx.inspect(Scalar(), example_inputs=(torch.randn(2, 3),))


def test_bicubic_and_uneven_pools_are_rewritten_in_a_conversion(tmp_path):
    class Odd(nn.Module):
        def forward(self, x):
            y = F.interpolate(x, size=(7, 5), mode="bicubic", align_corners=True)
            return F.adaptive_avg_pool2d(y, (3, 2)) + F.adaptive_max_pool2d(y, (3, 2))

    x = torch.rand(1, 2, 4, 3) * 2 - 1
    result = portx.convert(Odd(), example_inputs=(x,), out=tmp_path / "out", atol=2e-6, rtol=0)
    assert not {"resize", "adaptive_avg_pool", "adaptive_max_pool"} & set(result.report["ops"])
    assert result.report["verification"]["passed"] and result.report["tpu"]["verdict"] == "ok"
    report = json.loads(result.files["report"].read_text())
    assert report["ops"]["matmul"]["count"] == 4
