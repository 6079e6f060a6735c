"""The zoo both ways: PyTorch -> Keras-JAX (verified), the emitted Keras model -> PyTorch for torch-xla
(verified), and the round-tripped module against the original PyTorch model on the zoo's example inputs.

Every family converts PyTorch -> Keras-JAX in ``test_zoo.py``. The families in ``ROUND_TRIP`` also come
back; the others are left out of the parametrization, each with the failure that keeps it out.

Example:
    pytest tests/test_zoo_both_ways.py -k densenet
"""
import pytest
import torch
from torch import nn

import portx
from portx.verification.compare import compare_arrays
from tests.support.structured_code import assert_structured
from tests.support.zoo import ZOO
from tests.test_zoo import REPEATS

__all__ = []

#: Note [round trip gaps]: families that cannot make the round trip yet, with the reason. Empty since the Keras
#: frontend reads portx's own ``Constant`` layer (stored arrays used outside a Keras layer: layer scale, class
#: tokens, position embeddings, masks, resize matrices) and eagerly computed ``ops.where`` conditions.
ROUND_TRIP_GAPS = {}
ROUND_TRIP = sorted(set(ZOO) - set(ROUND_TRIP_GAPS))
#: the round trips whose Keras model (portx's own code) repeats a block that its layer names show (``blocks_0_ln1``;
#: ResNet's ``layer1_0_conv1``: Note [numbered blocks in a stage] in passes/blocks.py; the text encoder, whose mask
#: ops Keras orders between its layers': Note [glue that interleaves a block]). Not Swin: its second block shifts its
#: windows (a roll and a mask the first has not), as in the torch source (test_zoo's REPEATS). ConvNeXt and UNet: their
#: Keras layers are flat layers of the functional model named after the block (``stage1_dwconv``, ``enc1_0``), read
#: as blocks by that prefix (Note [blocks named by a prefix] in passes/blocks_prefix.py)
REPEATS_BACK = {"convnext", "densenet", "gpt", "mobilenetv3", "resnet", "text_encoder", "unet", "vit"}
#: the prefix-named blocks of a round trip, one class, and where each sits: the torch source's key again
#: (``stage1.dwconv.weight``; UNet's numbered parts ``enc1.0``, an ``nn.Sequential``: Note [blocks of numbered parts] in
#: targets/torch_xla/sequential_class.py). UNet's decoder blocks too, though Keras orders the upsampling and a pooling
#: between their layers (Note [counted names] in passes/blocks_prefix.py)
PREFIXED_BACK = {"convnext": (["stage1", "stage2"], "stage1.dwconv.weight"),
                 "unet": (["enc1", "enc2", "mid", "dec1", "dec2"], "enc1.0.weight")}
#: the round trips whose state_dict keys are the torch source's, in its order, and whose modules with weights sit at
#: the source's paths as its classes, but for the constants the Keras model stores (UNet's bilinear resize matrices,
#: computed by torch's ``F.interpolate``)
SOURCE_KEYS_BACK = {"unet": {"upsample_bilinear2d_cols_t_value", "upsample_bilinear2d_rows_value"}}
#: the torch sources whose repeated modules number no block (Note [sibling blocks]), straight to torch-xla: the class
#: written once and held at the source's paths, and the line ``Model.__init__`` builds the first block with
SIBLINGS_TO_TORCH = {"convnext": "self.stage1 = ConvNeXtBlock(16)", "unet": "self.enc1 = ConvBlock(3, 8)"}
#: the round trips whose torch code must be structured, not flat for being shorter: ResNet's stage-first blocks share
#: the class of the others (their projection ``layer2_0_downsample_0``/``_1`` optional, Note [optional submodules] in
#: targets/torch_xla/optional.py; the ZeroPadding2D before their stride-2 conv its padding again, Note [a pad folded
#: into its convolution] in passes/fold_pad.py)
STRUCTURED_BACK = {"resnet"}


def _outputs(model, inputs) -> list:
    with torch.no_grad():
        out = model(*inputs)
    return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else [out])]


def _passed(result, direction):
    ver = result.report["verification"]
    assert ver["passed"] is True, f"{direction}: {ver}"
    batch = result.report["dynamic"][0]  # free both ways, verified at 1 and 8 too
    assert batch["free"] and {1, 8} <= {c["size"] for c in batch["verified"]}, f"{direction}: {result.report['warnings']}"


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_zoo_model_converts_to_keras_and_back_to_torch(name, tmp_path):
    model, inputs = ZOO[name]()
    to_keras = portx.convert(model, example_inputs=inputs, to="keras-jax", out=tmp_path / "keras")
    _passed(to_keras, "torch -> keras-jax")
    assert_structured(to_keras, "keras-jax", repeats=name in REPEATS)
    back = portx.convert(to_keras.model, to="torch-xla", out=tmp_path / "torch")
    _passed(back, "keras -> torch-xla")
    # the Keras model's blocks, found from its layer names (blocks_0_ln1; Note [operations inside a block]), one
    # class each kind; flat where that is shorter (Note [structured only where shorter])
    assert_structured(back, "torch-xla", repeats=name in REPEATS_BACK, longer=name not in STRUCTURED_BACK,
                      shorter=name not in PREFIXED_BACK)  # as long as flat: two or three small blocks, one class
    if name in STRUCTURED_BACK:  # the source's paths: layer2.0.conv1 (Keras' layer2_0_conv1)
        assert "layer2.0.conv1.weight" in back.model.state_dict() and back.model.layer2[1].downsample_0 is None
    if name in PREFIXED_BACK:
        keys, key = PREFIXED_BACK[name]
        assert len({type(back.model.get_submodule(k)) for k in keys}) == 1 and key in back.model.state_dict()
    if name in SOURCE_KEYS_BACK:
        _assert_source_structure(model, back.model, SOURCE_KEYS_BACK[name])
    want, got = _outputs(model, inputs), _outputs(back.model, inputs)
    assert len(got) == len(want), (len(got), len(want))
    for i, (w, g) in enumerate(zip(want, got)):
        result = compare_arrays(w, g, atol=1e-5, rtol=1e-4)
        assert result["passed"], f"{name} output {i}, round trip against the original model: {result}"


def _assert_source_structure(source, back, stored) -> None:
    """``back``'s state_dict keys are ``source``'s in its order, with the ``stored`` constants besides; each module of
    ``source`` holding weights of its own sits at its path in ``back`` as its class, and each ``nn.Sequential`` of
    ``source`` around such modules is one in ``back`` too (``enc1.0``, not ``enc1._0``)."""
    keys = list(back.state_dict())
    assert [k for k in keys if k not in stored] == list(source.state_dict()) and stored <= set(keys), keys
    ours = dict(back.named_modules())
    for path, module in source.named_modules():
        if any(True for _ in module.parameters(recurse=False)):
            assert type(ours.get(path)).__name__ == type(module).__name__, (path, ours.get(path))
        elif type(module) is nn.Sequential and path:
            assert isinstance(ours.get(path), nn.Sequential), (path, ours.get(path))


@pytest.mark.parametrize("name", sorted(SIBLINGS_TO_TORCH))
def test_sibling_blocks_are_one_torch_class_at_the_source_paths(name, tmp_path):
    """ConvNeXt's stage1/stage2 one ``ConvNeXtBlock``, UNet's five double convs one ``ConvBlock(nn.Sequential)``
    (Note [blocks of numbered parts]); the state_dict keys are the source's."""
    model, inputs = ZOO[name]()
    result = portx.convert(model, example_inputs=inputs, to="torch-xla", out=tmp_path / "torch")
    _passed(result, "torch -> torch-xla")
    shape = assert_structured(result, "torch-xla")
    assert shape["defs"] == 1 and SIBLINGS_TO_TORCH[name] in result.files["code"].read_text(), shape
    assert sorted(result.model.state_dict()) == sorted(model.state_dict())


def test_round_trip_gaps_name_zoo_families():
    """A new zoo family round-trips unless it is named here; a stale name fails."""
    assert set(ROUND_TRIP_GAPS) <= set(ZOO), sorted(set(ROUND_TRIP_GAPS) - set(ZOO))


class Masked(nn.Module):
    """The padding-mask idiom ``~(ids == 0)`` and one-sided clamps (torch ``clamp_min`` -> ``ops.clip(x, a, None)``)."""

    def forward(self, x, ids):
        return torch.where(~(ids == 0), x.clamp_min(0.5), x.clamp_max(-0.2))


def test_mask_not_and_one_sided_clamps_convert_both_ways(tmp_path):
    model = Masked()
    inputs = (torch.randn(2, 5), torch.tensor([[0, 1, 2, 0, 3], [1, 0, 0, 2, 2]]))
    to_keras = portx.convert(model, example_inputs=inputs, to="keras-jax", out=tmp_path / "keras")
    _passed(to_keras, "torch -> keras-jax")
    _passed(portx.convert(to_keras.model, to="torch-xla", out=tmp_path / "torch"), "keras -> torch-xla")
