"""Every keras.applications model converted Keras -> PyTorch (``--to torch-xla``), verified, then the emitted
``model.py`` imported as a user would and run on a batch in the model's own pixel range against Keras.

- CI: all ten at the smallest input each accepts (``zoo_keras.build_application``: 32x32; Xception 71,
  InceptionV3 75), through ``portx.convert`` (verification and the torchax TPU lowering on). Building uses
  NumPy weight draws (Note [fast build] in zoo_keras), so a model costs its conversion, not 10-35 s of
  initializer compilation.
- CI: MobileNetV2 the way a user runs it: saved as ``.keras`` and converted by ``portx convert``.
- ``PORTX_SLOW=1``: the full-size sweep at the ImageNet size (224; Xception, InceptionV3 299) through the CLI
  from ``.keras`` files, all ten, their structure checked as in CI; 3 minutes with ``-n 2``.

Example:
    PORTX_SLOW=1 pytest tests/test_keras_applications_torch.py -k "ConvNeXt or EfficientNet"
"""
import json
import re

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import portx.api
from portx.cli import main
from portx.targets.codegen import import_by_path
from portx.verification.compare import compare_arrays
from tests.support.json_schema import problems
from tests.support.paths import REPO
from tests.support.structured_code import assert_structured
from tests.support.zoo_keras import APPLICATIONS, FULL_SIDES, build_application

__all__ = []

#: EfficientNetV2B0 at 224 set the per-element floor (Note [per-element check] in portx/equivalence.py): its
#: top_activation reaches 336, and correct conversions differ there by 1.5e-5 * scale.
FULL_SIZE = sorted(FULL_SIDES)
#: classes written for blocks that differ by optional parts (Note [optional parts] in
#: src/portx/targets/optional_parts.py), one as keras.applications writes one: EfficientNetB0's stride-2 blocks pass
#: their pad (Note [pad widths as one argument] in src/portx/targets/joinable.py), MobileNetV3Small's ReLU and
#: hard-swish blocks their activation (Note [the activation as an argument] there)
DEFS = {"EfficientNetB0": 1, "MobileNetV2": 1, "MobileNetV3Small": 1}


def _emitted_matches_keras(model, x, out):
    """The emitted module (out/model.py, its load_model()) on the pixel-range batch ``x`` against Keras.

    Keras runs eagerly, as verification just did on a batch of the same shape, so its per-op programs are
    compiled already; ``predict`` would compile the whole model once more (2 to 6 s of CPU a model).
    """
    net = import_by_path(out / "model.py").load_model()
    with torch.no_grad():
        got = net(torch.from_numpy(x)).numpy()
    want = np.asarray(model(x, training=False))
    result = compare_arrays(want, got, atol=1e-5, rtol=1e-4)
    assert result["passed"], f"{model.name} on pixels {x.shape}: {result}"
    return net


def _convert_keras_file_with_cli(model, tmp_path, monkeypatch=None):
    """(report, out) of ``portx convert`` on ``model`` saved as ``.keras``, the report valid against
    docs/report.schema.json (a torch-xla report with block rows); with ``monkeypatch``, also the conversion's result,
    caught on its way from ``api.convert`` to the CLI (its graph, for ``assert_structured``, without converting
    twice)."""
    src, out = tmp_path / f"{model.name}.keras", tmp_path / "out"
    model.save(src)
    caught, convert = [], portx.api.convert

    def convert_and_catch(*args, **kwargs):
        caught.append(convert(*args, **kwargs))
        return caught[-1]

    if monkeypatch is not None:
        monkeypatch.setattr(portx.api, "convert", convert_and_catch)
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert caught or monkeypatch is None, "the CLI did not call portx.api.convert"
    report = json.loads((out / "report.json").read_text())
    assert report["blocks"] and problems(json.loads((REPO / "docs" / "report.schema.json").read_text()), report) == []
    return report, out, *caught


@pytest.mark.parametrize("name", sorted(APPLICATIONS))
def test_application_converts_to_torch_verifies_and_lowers_for_tpu(name, tmp_path):
    model, x = build_application(name)
    result = portx.convert(model, to="torch-xla", out=tmp_path / "out")
    assert result.report["verification"]["passed"] is True, result.report["verification"]
    assert result.report["tpu"]["verdict"] == "ok", result.report["tpu"]
    batch = result.report["dynamic"][0]  # the batch stays free, verified at 1 and 8 too
    assert batch["free"] and {1, 8} <= {c["size"] for c in batch["verified"]}, result.report["warnings"]
    _emitted_matches_keras(model, x, result.out)
    _structured_like_keras(name, model, result, result.model)


def _structured_like_keras(name, model, result, net):
    """One class per kind of block the application repeats (conv2_block1, block_3, ...), flat where that is
    shorter (Note [structured only where shorter]), and ``net``'s modules nested as Keras' blocks; blocks that differ
    by optional parts are one class (``DEFS``)."""
    shape = assert_structured(result, "torch-xla", longer=True)
    assert shape["defs"] == DEFS.get(name, shape["defs"]), shape  # one class with optional parts
    if name in BLOCK_PATHS:
        _nested_like_keras(model, net, *BLOCK_PATHS[name])
    _named_like_a_person(name, result.files["code"].read_text())
    if name == "InceptionV3":
        _inception_blocks_alike(net)
    if name == "ConvNeXtTiny":
        _downsampling_at_keras_paths(model, net)


#: the torch path of a Keras layer in a block (the state_dict key before ``.weight``): ``(pattern, path)``, the
#: pattern's groups the container, the block's number (from 1) and the layer's name after the block's, the path with
#: the number from 0; outside blocks a layer's torch path is its Keras name. Letter case is kept (MobileNetV2's
#: ``block_2_expand_BN`` is ``block.1.expand_BN``); a SeparableConv2D is one module holding two convs (Xception's
#: ``block2_sepconv1`` is ``block.1.sepconv1``, its convs ``.depthwise`` and ``.pointwise``: Note [separable convs as
#: one module] in src/portx/targets/torch_xla/nesting.py); ConvNeXt's LayerScale holds its weight as a parameter
#: ``<block>.layer_scale_gamma``, and the layers of its Sequential stem and downsampling blocks are named after the
#: Sequential and the layer (``convnext_tiny_stem_convnext_tiny_stem_conv``)
BLOCK_PATHS = {"ResNet50": (r"(conv\d)_block(\d+)_(\w+)$", "{}.{}._{}"),  # conv2_block1_1_conv: conv2[0]._1_conv
               "MobileNetV2": (r"(block)_(\d+)_(\w+)$", "{}.{}.{}"),
               "Xception": (r"(block)(\d+)_(\w+)$", "{}.{}.{}")}


def _nested_like_keras(model, net, pattern, path):
    """Each block's layers under its stage, as keras.applications builds them (``BLOCK_PATHS``; Note [nested torch
    modules] in targets/torch_xla/blocks.py)."""
    import keras

    blocks = [(layer, re.match(pattern, layer.name)) for layer in model.layers if layer.weights]
    assert sum(found is not None for _, found in blocks) > 20
    for layer, found in blocks:
        if found:
            stage, block, rest = found.groups()
            where = path.format(stage, int(block) - 1, rest)
            separable = isinstance(layer, keras.layers.SeparableConv2D)
            for part in (".depthwise", ".pointwise") if separable else ("",):
                assert net.get_submodule(where + part) is not None, layer.name
        else:
            assert net.get_submodule(layer.name) is not None, layer.name


def _named_like_a_person(name, code):
    """Block arguments named for what they feed, never ``in_channels_1`` (Note [arguments named for what differs] in
    src/portx/targets/arg_names.py); NASNet's cells take ``x, p`` (Note [a cell's two inputs] in targets/
    cell_inputs.py); Xception's separable convs are one module each (Note [separable convs as one module])."""
    assert not re.search(r"def __init__\(self[^)]*_(channels|features)_\d", code), name
    if name == "NASNetMobile":
        assert code.count("def forward(self, x, p):") >= 2
    if name == "Xception":
        assert code.count("class SeparableConv2d(nn.Module):") == 1 and "self.sepconv1 = SeparableConv2d(" in code
        assert "sepconv2 = self.sepconv2(" in code


def _inception_blocks_alike(net):
    """InceptionV3's blocks cut from the graph, ``mixed0`` ... ``mixed10``, are ``net.mixed[i]``, their layers named
    within the block (``conv2d_43`` in mixed4 is ``mixed.4.conv2d_3``: Note [auto names in cut blocks] in
    src/portx/passes/blocks_cut.py), so the blocks of a kind hold the same state_dict keys."""
    keys = {}
    for key in net.state_dict():
        if key.startswith("mixed."):
            block, rest = key.split(".", 2)[1:]
            keys.setdefault(int(block), set()).add(rest)
    assert sorted(keys) == list(range(11))
    for kind in ((0, 1, 2), (4, 5, 6, 7), (9, 10)):
        assert all(keys[i] == keys[kind[0]] for i in kind), kind
    assert {"conv2d.weight", "conv2d_3.weight", "batch_normalization_3.running_var"} <= keys[4]


def _downsampling_at_keras_paths(model, net):
    """ConvNeXt's downsampling blocks, one class, keep the Keras paths of their layers, which carry the block's
    number (``convnext_tiny_downsampling_block_0.convnext_tiny_downsampling_layernorm_0``: Note [submodules named
    after their block] in src/portx/targets/torch_xla/numbered.py)."""
    paths = {w.path.rpartition("/")[0].replace("/", ".") for w in model.weights if "downsampling" in w.path}
    keys = {k.rpartition(".")[0] for k in net.state_dict() if "downsampling" in k}
    assert len(paths) == 6 and keys == paths, sorted(keys ^ paths)
    assert len({type(net.get_submodule(f"convnext_tiny_downsampling_block_{i}")) for i in range(3)}) == 1


@pytest.mark.parametrize("name", ["MobileNetV2"])
def test_keras_file_converts_to_torch_through_the_cli(name, tmp_path):
    model, x = build_application(name)
    report, out = _convert_keras_file_with_cli(model, tmp_path)
    assert report["verification"]["passed"] is True, report["verification"]
    assert report["tpu"]["verdict"] == "ok", report["tpu"]
    _emitted_matches_keras(model, x, out)


@pytest.mark.slow
@pytest.mark.parametrize("name", FULL_SIZE)
def test_full_size_application_converts_to_torch_through_the_cli(name, tmp_path, monkeypatch):
    model, x = build_application(name, side="full")
    report, out, result = _convert_keras_file_with_cli(model, tmp_path, monkeypatch)
    assert report["verification"]["passed"] is True, report["verification"]
    assert report["tpu"]["verdict"] == "ok", report["tpu"]
    # the structure checked at the ImageNet size too, on the emitted module a user imports
    _structured_like_keras(name, model, result, _emitted_matches_keras(model, x, out))
