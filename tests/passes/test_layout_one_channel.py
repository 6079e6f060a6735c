"""One-channel image outputs under ``--io-layout`` (Note [one-channel images] in passes/layout/one_channel.py),
and the I/O whose layout portx cannot tell, stated on the console and in report.json."""
import pytest
import torch
import torch.nn.functional as F

import portx
from portx.passes.layout import to_channels_last
from portx.passes.layout.one_channel import inner_layouts, one_channel_layout, unknown_layout_notes
from tests.passes.test_layout import CONV, check

#: a 1-channel conv then a nearest 2x upsampling written as reshape / expand / reshape (as legalize writes it):
#: the NHWC -> NCHW move of one channel is a reshape, which merges into the upsampling's reshapes
MASK = f"""
graph model(%x: float32[2x3x6x8]) {{
  param %w: float32[1x3x3x3]
  %c: float32[2x1x6x8] = conv(%x, %w) {{{CONV}}}
  %s: float32[2x1x6x1x8x1] = reshape(%c) {{shape=(2, 1, 6, 1, 8, 1)}}
  %e: float32[2x1x6x2x8x2] = expand(%s) {{shape=(2, 1, 6, 2, 8, 2)}}
  %m: float32[2x1x12x16] = reshape(%e) {{shape=(2, 1, 12, 16)}}
  return %m
}}
"""


def test_a_merged_one_channel_output_takes_channels_last():
    after = check(MASK, to_channels_last, 0, io_layout="channels-last")
    assert after.outputs[0].type.shape == (2, 12, 16, 1) and after.inputs[0].type.shape == (2, 6, 8, 3)
    rows = after.meta["io_layout"]
    assert [r["layout"] for r in rows["inputs"] + rows["outputs"]] == ["NHWC", "NHWC"], rows


def test_a_merged_one_channel_output_is_named_nchw_in_the_source_layout():
    after = check(MASK, to_channels_last, 1)
    assert after.meta["io_layout"]["outputs"][0]["layout"] == "NCHW"


def test_one_channel_layout_needs_an_image_op_and_one_unit_axis():
    assert one_channel_layout((2, 1, 6, 8), True) is False and one_channel_layout((2, 6, 8, 1), False) is True
    assert one_channel_layout((2, 1, 6, 8), None) is None  # no image op computes it
    assert one_channel_layout((2, 1, 6, 1), True) is None  # either axis could be the channel
    assert one_channel_layout((2, 8), True) is None


def test_inner_layouts_follow_the_data_path():
    from portx.ir import parse_graph
    from tests.passes.test_layout import normalized

    graph = to_channels_last(normalized(parse_graph(MASK)))
    inner = inner_layouts(graph)
    assert inner[graph.outputs[0]] is True and graph.inputs[0] not in inner


class _Mask(torch.nn.Module):
    """A binary-segmentation head: conv to one channel, upsampled 2x, sigmoid."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 1, 3, padding=1)

    def forward(self, x):
        return torch.sigmoid(F.interpolate(self.conv(x), scale_factor=2))


class _Plain(torch.nn.Module):
    """No image op: portx cannot tell which axis holds the channels."""

    def forward(self, x):
        return x[:, :1] * 2


def _converted(module, target, tmp_path):
    torch.manual_seed(0)
    result = portx.convert(module.eval(), example_inputs=(torch.randn(1, 3, 16, 24),), to=target,
                           out=tmp_path / target, io_layout="channels-last", grad=False)
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    return result


def test_an_upsampled_mask_is_channels_last_on_keras(tmp_path):
    result = _converted(_Mask(), "keras-jax", tmp_path)
    out = result.report["layout"]["outputs"][0]
    assert out["layout"] == "NHWC" and out["source_layout"] == "NCHW" and out["shape"][-1] == 1, out
    assert tuple(result.model.outputs[0].shape)[1:] == (32, 48, 1)
    assert not any("channel axis" in w for w in result.report["warnings"])


def test_a_mask_on_torch_xla_states_the_layout_it_keeps(tmp_path):
    result = _converted(_Mask(), "torch-xla", tmp_path)
    out = result.report["layout"]["outputs"][0]
    assert out["layout"] == "NCHW" and "stays NCHW" in out["note"], out
    assert out["note"] in result.report["warnings"]


@pytest.mark.parametrize("target", ["keras-jax", "torch-xla"])
def test_an_output_of_unknown_layout_is_stated(tmp_path, target):
    result = _converted(_Plain(), target, tmp_path)
    out = result.report["layout"]["outputs"][0]
    assert out["layout"] is None and "cannot tell its channel axis" in out["note"], out
    assert out["note"] in result.report["warnings"]


def test_source_io_layout_adds_no_note():
    assert unknown_layout_notes({"outputs": [{"name": "y", "shape": [1, 1, 4, 4], "layout": None}]}, "source") == []
