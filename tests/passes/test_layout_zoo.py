"""Proof of the layout pass on the zoo's CNNs: transposes counted in the emitted Keras model's jaxpr.

A transpose counts when its operand depends on the model's input (the Keras JAX transposed
convolution also transposes its kernel, a constant XLA folds away). With the default I/O layout
only the boundary transposes remain, one per image input or output; with ``io_layout=
"channels-last"`` none. Verification passes at the default tolerances either way.
"""
import jax
import numpy as np
import pytest
import torch

import portx
from tests.support.zoo import ZOO

CNNS = ["resnet", "mobilenetv3", "unet"]


def _sub_jaxprs(eqn):
    for param in eqn.params.values():
        for item in param if isinstance(param, (list, tuple)) else [param]:
            if hasattr(item, "jaxpr") and hasattr(item, "consts"):  # ClosedJaxpr
                yield item.jaxpr
            elif hasattr(item, "eqns"):
                yield item


def data_transposes(jaxpr, tainted=None) -> int:
    """Transposes whose operand depends on the jaxpr's inputs, sub-jaxprs (pjit, custom_jvp...) included."""
    tainted = set(jaxpr.invars) if tainted is None else tainted
    count = 0
    for eqn in jaxpr.eqns:
        depends = any(v in tainted for v in eqn.invars if not hasattr(v, "val"))
        count += eqn.primitive.name == "transpose" and depends
        for sub in _sub_jaxprs(eqn):
            count += data_transposes(sub, set(sub.invars) if depends else set())
        if depends:
            tainted.update(eqn.outvars)
    return count


def emitted_transposes(result, arrays) -> int:
    call = jax.make_jaxpr(lambda *xs: result.model(list(xs) if len(xs) > 1 else xs[0]))
    return data_transposes(call(*arrays).jaxpr)


@pytest.mark.parametrize("name", CNNS)
@pytest.mark.parametrize("io_layout", ["source", "channels-last"])
def test_zoo_cnn_has_no_inner_transpose(name, io_layout, tmp_path):
    model, inputs = ZOO[name]()
    result = portx.convert(model, example_inputs=inputs, out=tmp_path / "out", io_layout=io_layout)
    assert result.report["verification"]["passed"]
    rows = result.report["layout"]["inputs"] + result.report["layout"]["outputs"]
    images = [row for row in rows if len(row["shape"]) == 4]
    assert all(row["source_layout"] == "NCHW" for row in images)
    assert result.report["layout"]["inner_transposes"] == []
    arrays = [t.numpy() for t in inputs]
    if io_layout == "source":
        assert all(row["layout"] == "NCHW" and row["transposed_inside"] for row in images)
        assert emitted_transposes(result, arrays) == len(images)
        return
    assert all(row["layout"] == "NHWC" for row in images)
    nhwc = [np.ascontiguousarray(a.transpose(0, 2, 3, 1)) if a.ndim == 4 else a for a in arrays]
    assert emitted_transposes(result, nhwc) == 0
    with torch.no_grad():
        want = model(*inputs).numpy()
    got = np.asarray(result.model(nhwc[0]))
    np.testing.assert_allclose(got, want.transpose(0, 2, 3, 1) if want.ndim == 4 else want, atol=1e-4, rtol=1e-4)


def test_cli_io_layout_channels_last_states_the_layouts(tmp_path):
    import json

    from click.testing import CliRunner
    from torch import nn

    from portx.cli import main

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU()).eval()
    torch.export.save(torch.export.export(model, (torch.randn(1, 3, 8, 8),)), tmp_path / "m.pt2")
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "m.pt2"), "-o", str(out), "--io-layout", "channels-last"])
    assert run.exit_code == 0, run.output
    report = json.loads((out / "report.json").read_text())
    assert report["verification"]["passed"]
    rows = report["layout"]["inputs"] + report["layout"]["outputs"]
    assert [(r["layout"], r["source_layout"], r["shape"]) for r in rows] == \
        [("NHWC", "NCHW", [1, 8, 8, 3]), ("NHWC", "NCHW", [1, 8, 8, 4])]
    assert f"{rows[0]['name']} NHWC (source NCHW)" in (out / "model.py").read_text()


class _ChannelShuffle(torch.nn.Module):
    """Conv, then ShuffleNet's channel shuffle: a reshape that splits channels and a permute that mixes them."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        n, c, h, w = y.shape
        y = y.reshape(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)
        return self.head(y)


def test_a_reshape_that_mixes_channels_keeps_one_transpose_and_the_report_says_where(tmp_path):
    torch.manual_seed(0)
    model, x = _ChannelShuffle().eval(), torch.randn(1, 3, 8, 8)
    result = portx.convert(model, example_inputs=(x,), out=tmp_path / "out", io_layout="channels-last")
    assert result.report["verification"]["passed"]
    inner = result.report["layout"]["inner_transposes"]
    assert [(row["origin"], row["feeds"]) for row in inner] == [("source", ["reshape"])], inner
    nhwc = np.ascontiguousarray(x.numpy().transpose(0, 2, 3, 1))
    assert emitted_transposes(result, [nhwc]) == 1


def test_cli_names_the_transposes_left_inside(tmp_path):
    from click.testing import CliRunner

    from portx.cli import main

    torch.manual_seed(0)
    torch.export.save(torch.export.export(_ChannelShuffle().eval(), (torch.randn(1, 3, 8, 8),)), tmp_path / "s.pt2")
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "s.pt2"), "-o", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    assert "layout: 1 transpose(s) inside the model: source " in run.output and "-> reshape" in run.output
