"""Note [free dims in the emitted layout] (passes/layout/__init__.py): with ``--io-layout channels-last`` the free
dims are still read from the one symbolic export's shapes (one torch.export, one lowering, ``found_by`` "symbolic
export"), where before the permuted inputs and outputs sent every conversion to a second lowering and a
``--dynamic`` image axis was read at the wrong axis of the NHWC graph (exit 2). Spies count the exports and the
walks; the emitted models run at other batch and image sizes and match the source, on both targets."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import portx
import portx.frontends.torch.source as torch_source
from portx.options import Checks, Output, Shapes
from portx.targets import find_target
from tests.support.counting import counted

TARGETS = ["keras-jax", "torch-xla"]


class ImageAndMask(nn.Module):
    """A small U-Net: an image out (3 channels) and a 1-channel mask out; pools by 2 and upsamples back (``pool``
    False: no pooling, any image size)."""

    def __init__(self, pool=True):
        super().__init__()
        torch.manual_seed(0)
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.img, self.mask, self.pool = nn.Conv2d(16, 3, 1), nn.Conv2d(16, 1, 1), pool

    def forward(self, x):
        a = F.relu(self.c1(x))
        b = F.interpolate(F.relu(self.c2(F.max_pool2d(a, 2))), scale_factor=2.0) if self.pool else self.c2(a)
        h = torch.cat([a, b], 1)
        return self.img(h), torch.sigmoid(self.mask(h))


class TinyViT(nn.Module):
    """Patches of 4 x 4, one encoder block, a mean over the tokens."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.block = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        return self.head(self.block(self.patch(x).flatten(2).transpose(1, 2)).mean(1))


@pytest.fixture
def counts(monkeypatch):
    """[exports, walks]: how often a conversion runs torch.export and lowers (walks) a program."""
    return counted(monkeypatch, torch.export, "export"), counted(monkeypatch, torch_source, "walk_program")


def _found(report):
    return {r["symbol"]: (r["free"], r.get("found_by")) for r in report["dynamic"]}


def _nhwc(rows):
    return [row["layout"] == "NHWC" for row in rows]


def _matches(result, to, module, shapes):
    """The emitted model on NCHW ``shapes`` (made NHWC where its inputs are) against the module."""
    layout = result.report["layout"]
    for k, shape in enumerate(shapes):
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(k))
        fed = [x.permute(0, 2, 3, 1).numpy() if last else x.numpy() for last in _nhwc(layout["inputs"])]
        got = find_target(to).run(result.model, fed)
        with torch.no_grad():
            want = module(x)
        for g, w, last in zip(got, want if isinstance(want, tuple) else (want,), _nhwc(layout["outputs"])):
            np.testing.assert_allclose(g, (w.permute(0, 2, 3, 1) if last else w).numpy(), rtol=1e-4, atol=1e-4,
                                       err_msg=str(shape))


def _convert(module, shape, to, tmp_path, dynamic=()):
    return portx.convert(module, example_inputs=(torch.randn(*shape),), to=to, checks=Checks(grad=False),
                         shapes=Shapes(io_layout="channels-last", dynamic=list(dynamic)),
                         output=Output(out=tmp_path / "o"))


@pytest.mark.parametrize("to", TARGETS)
def test_an_image_and_a_mask_keep_batch_and_image_size_free_from_one_export(to, counts, tmp_path):
    """Before: two walks (batch only), and ``--dynamic x:2,3`` read axes 2 and 3 of the NHWC graph (width and
    channels) and exited 2."""
    module = ImageAndMask().eval()
    result = _convert(module, (2, 3, 16, 24), to, tmp_path, ["x:2,3"])
    assert [c[0] for c in counts] == [1, 1], counts
    assert _found(result.report) == {s: (True, "symbolic export") for s in ("batch", "x_2", "x_3")}, \
        result.report["warnings"]
    if to == "keras-jax":  # torch-xla keeps the model's own NCHW (a warning says so)
        assert _nhwc(result.report["layout"]["inputs"]) == [True] and \
            _nhwc(result.report["layout"]["outputs"]) == [True, True]
        sites = {r["symbol"]: r["sites"] for r in result.report["dynamic"]}
        assert sites == {"batch": [["x", 0]], "x_2": [["x", 1]], "x_3": [["x", 2]]}  # the emitted model's axes
    _matches(result, to, module, [(1, 3, 16, 24), (3, 3, 20, 12), (8, 3, 8, 32)])


@pytest.mark.parametrize("to", TARGETS)
def test_a_vit_keeps_its_batch_free_from_one_export(to, counts, tmp_path):
    module = TinyViT().eval()
    result = _convert(module, (2, 3, 16, 16), to, tmp_path)
    assert [c[0] for c in counts] == [1, 1], counts
    assert _found(result.report) == {"batch": (True, "symbolic export")}, result.report["warnings"]
    _matches(result, to, module, [(n, 3, 16, 16) for n in (1, 3, 8)])


@pytest.mark.parametrize("to", TARGETS)
def test_a_pt2_with_dims_is_exported_once(to, counts, tmp_path):
    module, h, w = ImageAndMask(pool=False).eval(), torch.export.Dim("h", min=4, max=64), torch.export.Dim("w", max=64)
    path = tmp_path / "unet.pt2"
    torch.export.save(torch.export.export(module, (torch.randn(2, 3, 16, 24),), dynamic_shapes=({2: h, 3: w},)),
                      str(path))
    exports, walks = (c[0] for c in counts)
    result = portx.convert(str(path), to=to, checks=Checks(grad=False), shapes=Shapes(io_layout="channels-last"),
                           output=Output(out=tmp_path / "o"))
    assert (counts[0][0] - exports, counts[1][0] - walks) == (1, 1), counts  # once again, from its module
    assert _found(result.report) == {s: (True, "symbolic export") for s in ("batch", "x_2", "x_3")}, \
        result.report["warnings"]
    _matches(result, to, module, [(1, 3, 16, 24), (3, 3, 13, 21)])


def test_a_subclassed_keras_unet_to_channels_first_reads_jax_symbols(tmp_path, monkeypatch):
    """Keras' NHWC source, NCHW I/O on torch-xla: the JAX frontend's symbols through the same permutes. Before,
    ``--dynamic x:1`` (the source's height) was read at axis 1 of the NCHW graph (channels): exit 2."""
    import portx.frontends.keras.subclassed as subclassed
    from tests.support.zoo_traced import UNet, built

    lowerings, model = counted(monkeypatch, subclassed, "lower_jaxpr"), built(UNet, (2, 8, 12, 3))
    result = portx.convert(model, example_inputs=(np.ones((2, 8, 12, 3), np.float32),), to="torch-xla",
                           shapes=Shapes(io_layout="channels-first", dynamic=["x:1", "x:2"]), checks=Checks(grad=False),
                           output=Output(out=tmp_path / "o"))
    assert lowerings[0] == 1, lowerings
    assert _found(result.report) == {s: (True, "symbolic export") for s in ("batch", "x_1", "x_2")}, \
        result.report["warnings"]
    assert [r["sites"] for r in result.report["dynamic"]] == [[["x", 0]], [["x", 2]], [["x", 3]]]  # NCHW
    for k, shape in enumerate([(1, 8, 12, 3), (3, 10, 14, 3)]):
        x = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
        got = find_target("torch-xla").run(result.model, [x.transpose(0, 3, 1, 2)])[0]
        np.testing.assert_allclose(got, np.asarray(model(x)).transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-4)


def test_an_onnx_unet_with_channels_last_keeps_its_declared_image_free(tmp_path):
    """No symbols (two lowerings, Note [steps found by lowering]), but its dim_params name the file's NCHW axes:
    before, ``w`` was read at axis 3 of the NHWC graph (channels) and pinned."""
    from tests.frontends.onnx.test_onnx_models import export

    module = ImageAndMask().eval()
    path = export(module, (torch.randn(2, 3, 16, 24),), tmp_path / "m.onnx", False, {"x": {0: "b", 2: "h", 3: "w"}})
    result = portx.convert(str(path), to="keras-jax", checks=Checks(grad=False),
                           shapes=Shapes(io_layout="channels-last"), output=Output(out=tmp_path / "o"))
    rows = {r["symbol"]: r for r in result.report["dynamic"]}
    assert {s: (r["free"], r["sites"], r["step"]) for s, r in rows.items()} == {
        "batch": (True, [["x", 0]], 1), "h": (True, [["x", 1]], 2), "w": (True, [["x", 2]], 2)}, \
        result.report["warnings"]
    _matches(result, "keras-jax", module, [(3, 3, 20, 12)])
