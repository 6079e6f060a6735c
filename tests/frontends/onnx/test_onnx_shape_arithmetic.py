"""ONNX shape arithmetic over free dims (Note [onnx shape arithmetic] in frontends/onnx/walk.py): ``Shape``
chains that compute a Resize's ``sizes`` (``F.interpolate(size=...)`` in both torch exporters) convert with
the batch, and the image size where the file declares it, free on both targets.

Every model is built here with a fixed seed; nothing downloads.
"""
import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import portx
from portx.frontends import load
from tests.frontends.onnx.test_onnx_models import export
from tests.support.harness import TARGETS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")


class Upscaler(torch.nn.Module):
    """conv, nearest upsampling to twice the input's own size (a Shape -> Gather -> Mul -> Concat chain), conv."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 1, 3, padding=1)

    def forward(self, x):
        return self.c2(F.interpolate(self.c1(x), size=(x.shape[2] * 2, x.shape[3] * 2), mode="nearest"))


class TinyUNet(torch.nn.Module):
    """down (conv, max pool, conv), up to the skip's size (bilinear, sizes from Shape -> Slice), concat, 1-channel
    mask: the decoder of a segmentation model."""

    def __init__(self):
        super().__init__()
        self.d1, self.d2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 16, 3, padding=1)
        self.u1, self.out = torch.nn.Conv2d(24, 8, 3, padding=1), torch.nn.Conv2d(8, 1, 1)

    def forward(self, x):
        a = F.relu(self.d1(x))
        b = F.relu(self.d2(F.max_pool2d(a, 2)))
        up = F.interpolate(b, size=a.shape[2:], mode="bilinear", align_corners=False)
        return torch.sigmoid(self.out(F.relu(self.u1(torch.cat([up, a], 1)))))


def _convert(module, dynamic, target, tmp_path, dynamo):
    torch.manual_seed(0)
    path = export(module.eval(), (torch.randn(2, 3, 16, 24),), tmp_path / "m.onnx", dynamo, {"x": dynamic})
    result = portx.convert(str(path), to=target, out=tmp_path / f"out-{target}", grad=False)
    assert result.ok and result.report["verification"]["passed"] is True, result.report["verification"]
    return {row["symbol"]: row for row in result.report["dynamic"]}


@pytest.mark.parametrize("dynamo", [False, True], ids=["classic", "dynamo"])
@pytest.mark.parametrize("target", TARGETS)
def test_resize_to_computed_size_keeps_batch_and_image_free(tmp_path, target, dynamo):
    rows = _convert(Upscaler(), {0: "batch", 2: "h", 3: "w"}, target, tmp_path, dynamo)
    assert all(rows[s]["free"] for s in ("batch", "h", "w")), rows
    assert {c["size"] for c in rows["batch"]["verified"]} >= {1, 8}
    assert len({c["size"] for c in rows["h"]["verified"]}) >= 2 and all(c["passed"] for c in rows["h"]["verified"])


@pytest.mark.parametrize("dynamo", [False, True], ids=["classic", "dynamo"])
@pytest.mark.parametrize("target", TARGETS)
def test_unet_resized_to_skip_size_keeps_batch_free(tmp_path, target, dynamo):
    rows = _convert(TinyUNet(), {0: "batch"}, target, tmp_path, dynamo)
    assert rows["batch"]["free"] and {c["size"] for c in rows["batch"]["verified"]} >= {1, 8}, rows


def _resize_by_shape_chain(path, op="Mul"):
    """Resize to ``Shape(x)[2:] (op) 2``, written out node by node as the classic exporter does."""
    const = {"two": np.array([2], np.int64), "lo": np.array([0], np.int64), "mid": np.array([2], np.int64),
             "hi": np.array([4], np.int64)}
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Slice", ["shape", "lo", "mid"], ["nc"]),
             helper.make_node("Slice", ["shape", "mid", "hi"], ["hw"]),
             helper.make_node(op, ["hw", "two"], ["hw2"]),
             helper.make_node("Concat", ["nc", "hw2"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, 4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)],
                              [numpy_helper.from_array(a, k) for k, a in const.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("op, size", [("Mul", (8, 12)), ("Div", (2, 3))])
def test_resize_sizes_from_a_shape_chain_lower_statically(tmp_path, op, size):
    """Shape inference leaves the output unknown (no data propagation at opset 17); the folded chain gives it."""
    graph = load(str(_resize_by_shape_chain(tmp_path / "r.onnx", op))).lower()
    assert graph.outputs[0].type.shape == (1, 2) + size
