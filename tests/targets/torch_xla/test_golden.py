"""Golden files of the emitted PyTorch: blocks the source repeats written once as nested ``nn.Module`` classes
in ``nn.Sequential`` / ``nn.ModuleList`` containers, so ``state_dict()`` keys follow the source's paths
(targets/torch_xla/blocks.py, Note [nested torch modules]).

Refresh after an intended change with: ./scripts/test tests/targets/torch_xla/test_golden.py --update-golden
"""
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import portx
from portx.options import Checks
from tests.support.golden import check_golden
from tests.support.structured_code import assert_structured
from tests.support.structured_models import hf_llama, keras_resnet, small_decoder, small_resnet, small_vit, \
    torchvision_vit

GOLDEN = Path(__file__).resolve().parent / "golden"


def _case(name):
    """Three blocks a stage: with two, each stage's first block is a class of its own, and the structured code is
    longer than the flat (Note [structured only where shorter])."""
    if name == "keras_resnet":
        return keras_resnet(stages=(3, 3)), {}
    if name == "keras_hub_gpt2":  # dropout 0.1: each block owns its nn.Dropout modules (Note [weightless modules])
        keras_hub = pytest.importorskip("keras_hub")
        import keras

        keras.backend.clear_session()  # Keras names its Dropouts from a process-wide count: `dropout` is the first
        keras.utils.set_random_seed(0)
        return keras_hub.models.GPT2Backbone(vocabulary_size=100, num_layers=2, hidden_dim=32, intermediate_dim=64,
                                             num_heads=2, max_sequence_length=16), {"grad": False}
    if name == "hf_llama":
        pytest.importorskip("transformers")
    model, inputs = {"resnet": lambda: small_resnet(layers=(3, 3)), "vit": small_vit, "decoder": small_decoder,
                     "hf_llama": hf_llama, "torchvision_vit": torchvision_vit}[name]()
    return model, {"example_inputs": inputs}


@pytest.mark.parametrize("name", ["decoder", "hf_llama", "keras_hub_gpt2", "keras_resnet", "resnet", "torchvision_vit",
                                  "vit"])
def test_structured_source_matches_golden(name, tmp_path, request):
    model, kwargs = _case(name)
    result = portx.convert(model, out=tmp_path / "out", to="torch-xla", verify=False, **kwargs)
    code = result.files["code"].read_text()
    check_golden(code, GOLDEN / f"{name}.py.txt", request)
    assert "(nn.Module):" in code.split("class Model", 1)[0], "no block class"


def test_keras_applications_blocks_nest_under_their_stage(tmp_path):
    result = portx.convert(keras_resnet(stages=(3, 3)), out=tmp_path / "out", to="torch-xla")  # verifies
    model = result.model
    assert isinstance(model.conv3, torch.nn.Sequential) and len(model.conv3) == 3
    assert isinstance(model.conv3[1]._2_conv, torch.nn.Conv2d)
    assert "conv2.0._1_conv.weight" in model.state_dict()


@pytest.mark.parametrize("make", [small_resnet, keras_resnet], ids=["resnet", "keras_resnet"])
def test_two_blocks_a_stage_share_classes_and_keep_the_source_s_keys(make, tmp_path):
    """Two blocks a stage: the first of each stage (a projection shortcut, stride 1 or 2) shares the class of the
    others, its projection an optional submodule (a torch source's ``downsample``) or optional layers (Keras'
    ``_0_conv`` and ``_0_bn``, each built where it is: Note [optional submodules] in targets/torch_xla/optional.py);
    the code is shorter than the flat form and keeps the source's keys."""
    source = make()
    kwargs = {"example_inputs": source[1]} if isinstance(source, tuple) else {}
    result = portx.convert(source[0] if kwargs else source, out=tmp_path / "out", to="torch-xla", **kwargs)
    code = result.files["code"].read_text()
    assert_structured(result, "torch-xla")
    assert code.split("class Model", 1)[0].count("(nn.Module):") == 1, code
    if not kwargs:  # the shortcut's layers where Keras has them: the state_dict's order is the flat code's
        keys = [k.split(".")[2] for k in result.model.state_dict() if k.startswith("conv3.0.") and "weight" in k]
        assert keys == ["_1_conv", "_1_bn", "_2_conv", "_2_bn", "_3_conv", "_0_conv", "_0_bn", "_3_bn"], keys
        assert "Block(16, 8, 2, shortcut=True)," in code and result.model.conv3[1]._0_conv is None
    if kwargs:
        assert list(result.model.state_dict()) == list(source[0].state_dict())
        assert "Bottleneck(16, 8, 2, downsample=True)," in code and result.model.layer1[1].downsample is None


def test_structured_module_verifies_trains_saves_and_reloads(tmp_path):
    source, (x,) = small_resnet(layers=(3, 3))
    result = portx.convert(source, out=tmp_path / "out", to="torch-xla", example_inputs=(x,))  # verifies, or raises
    model = result.model
    assert isinstance(model.layer1[1].conv1, torch.nn.Conv2d)
    assert set(model.state_dict()) == set(source.state_dict())  # nested at every depth: layer1.0.downsample.0
    assert isinstance(model.layer1[0].downsample, torch.nn.Sequential) and model.layer1[1].downsample is None
    assert {type(block).__name__ for block in [*model.layer1, *model.layer2]} == {"Bottleneck"}  # the source's class
    # the per-node trace reads a flat emission: a node inside a block class's forward has its row
    traced = {row["node"]: row for row in result.report["node_errors"]["rows"]}
    assert traced["layer1.1.conv2"]["passed"] and "layer2.0.downsample.0" in traced, sorted(traced)
    _trains_saves_and_reloads(model, x, tmp_path)


def _trains_saves_and_reloads(model, x, tmp_path):
    """One SGD step on ``x`` (``model`` in eval mode after), its state_dict saved and loaded strictly into a fresh
    ``type(model)()``, which then gives the same outputs."""
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    out = model(x)
    torch.nn.functional.mse_loss(out, torch.zeros_like(out)).backward()
    optimizer.step()
    model.eval()
    torch.save(model.state_dict(), tmp_path / "state.pt")
    fresh = type(model)()
    fresh.load_state_dict(torch.load(tmp_path / "state.pt"), strict=True)
    fresh.eval()
    with torch.no_grad():
        np.testing.assert_allclose(fresh(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)


def test_a_keras_application_matches_golden_trains_saves_and_reloads(tmp_path, request):
    """keras.applications' own MobileNetV2 (alpha 0.35 at 32x32, the smallest application that repeats a block):
    its 16 inverted residual blocks one class whose stride-2 blocks and residual adds are optional parts (Note
    [optional parts] in targets/optional_parts.py), the state_dict keys its layers' names nested as Keras' blocks
    (``block_2_expand_BN`` is ``block.1.expand_BN``); verified (gradients by the application's own test in
    tests/test_keras_applications_torch.py), one training step, saved and reloaded."""
    import keras

    from tests.support.zoo_keras import build_application

    keras.backend.clear_session()  # its input is `input_layer` only where no Keras Input came before in the process
    source, x = build_application("MobileNetV2", alpha=0.35)
    result = portx.convert(source, out=tmp_path / "out", to="torch-xla", checks=Checks(grad=False))  # verifies
    check_golden(result.files["code"].read_text(), GOLDEN / "keras_mobilenetv2.py.txt", request)
    assert len(assert_structured(result, "torch-xla")["written"]) == 16  # "block_1 to block_16" read back
    model, x = result.model, torch.from_numpy(np.concatenate([x, x[:, ::-1]]))  # batch norm trains on 2 rows of 1x1
    assert isinstance(model.block, torch.nn.Sequential) and len(model.block) == 16
    assert {type(block).__name__ for block in model.block} == {"Block"}
    weighted = [layer.name for layer in source.layers if layer.weights]
    nested = [re.sub(r"^block_(\d+)_", lambda m: f"block.{int(m[1]) - 1}.", name) for name in weighted]
    assert list(dict.fromkeys(key.rsplit(".", 1)[0] for key in model.state_dict())) == nested  # in Keras' order
    _trains_saves_and_reloads(model, x, tmp_path)
