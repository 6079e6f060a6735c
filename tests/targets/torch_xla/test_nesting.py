"""The emitted torch module nested as the source nests it, at every depth (targets/torch_xla/nesting.py, Note
[nested paths]): ``nest`` on statement rows, and a Hugging Face Llama written as one ``LlamaDecoderLayer`` class
in an ``nn.ModuleList``, whose converted ``state_dict()`` has the source's keys, verified, saved and reloaded. The torchvision-style ResNet is in test_golden.py, keras.applications
ResNet50 in tests/test_keras_applications_torch.py.
"""
import numpy as np
import pytest
import torch

import portx
from portx.targets.torch_xla.nesting import SEPARABLE, access, nest, separable
from tests.support.structured_models import hf_llama


def _rows(*lines):
    return [(2, line, "") for line in lines]


def test_attributes_move_to_their_source_paths():
    init = _rows("self.self_attn_q_proj = nn.Linear(4, 4)", "self.downsample_0 = nn.Conv2d(4, 8, 1)",
                 "self.downsample_1 = nn.BatchNorm2d(8)", "self.norm = nn.LayerNorm(4)")
    body = _rows("q = self.self_attn_q_proj(x)", "d = self.downsample_1(self.downsample_0(x))")
    paths = {"self_attn_q_proj": "self_attn.q_proj", "downsample_0": "downsample.0", "downsample_1": "downsample.1",
             "norm": "norm"}
    new_init, new_body, moved = nest(init, body, paths)
    assert moved == {"self_attn_q_proj": "self_attn.q_proj", "downsample_0": "downsample.0",
                     "downsample_1": "downsample.1"}
    assert [text for _, text, _ in new_init] == [
        "self.self_attn = nn.Module()", "self.self_attn.q_proj = nn.Linear(4, 4)", "self.downsample = nn.Sequential(",
        "nn.Conv2d(4, 8, 1),", "nn.BatchNorm2d(8),", ")", "self.norm = nn.LayerNorm(4)"]
    assert [text for _, text, _ in new_body] == ["q = self.self_attn.q_proj(x)",
                                                 "d = self.downsample[1](self.downsample[0](x))"]


def test_a_clash_keeps_the_flat_name_and_a_gap_is_an_identity():
    init = _rows("self.attn = nn.Linear(4, 12)", "self.attn_out_proj = nn.Linear(4, 4)",
                 "self.mlp_0 = nn.Linear(4, 8)", "self.mlp_2 = nn.Linear(8, 4)")
    paths = {"attn": "attn", "attn_out_proj": "attn.out_proj", "mlp_0": "mlp.0", "mlp_2": "mlp.2"}
    new_init, _, moved = nest(init, [], paths, classes={"mlp": "ModuleList"})
    assert moved == {"mlp_0": "mlp.0", "mlp_2": "mlp.2"}  # attn is a leaf: out_proj cannot live under it
    texts = [text for _, text, _ in new_init]
    assert texts[:3] == ["self.attn = nn.Linear(4, 12)", "self.attn_out_proj = nn.Linear(4, 4)",
                         "self.mlp = nn.ModuleList(["]
    assert texts[4] == "nn.Identity()," and access(("layers", "0", "mlp")) == "self.layers[0].mlp"


def test_numbered_containers_are_built_directly_and_named_ones_assigned_by_name():
    init = _rows("self.layers_0_conv = nn.Conv2d(4, 4, 1)", "self.layers_1_conv = nn.Conv2d(4, 4, 1)",
                 "self.features_0 = nn.Conv2d(3, 4, 1)", "self.features_1_conv_0_0 = nn.Conv2d(4, 4, 3)",
                 "self.features_1_conv_0_1 = nn.BatchNorm2d(4)", "self.features_1_conv_1 = nn.Conv2d(4, 8, 1)",
                 "self.gammas_0 = nn.Parameter(torch.zeros((4,), dtype=torch.float32))")
    paths = {"layers_0_conv": "layers.0.conv", "layers_1_conv": "layers.1.conv", "features_0": "features.0",
             "features_1_conv_0_0": "features.1.conv.0.0", "features_1_conv_0_1": "features.1.conv.0.1",
             "features_1_conv_1": "features.1.conv.1", "gammas_0": "gammas.0"}
    new_init, _, moved = nest(init, [], paths, classes={"layers": "ModuleList"})
    assert "gammas_0" not in moved  # a Parameter is no item of a container of modules: it keeps its name
    assert [(indent, text) for indent, text, _ in new_init] == [
        (2, "self.layers = nn.ModuleList([nn.Module() for _ in range(2)])"),
        (2, "self.layers[0].conv = nn.Conv2d(4, 4, 1)"), (2, "self.layers[1].conv = nn.Conv2d(4, 4, 1)"),
        (2, "self.features = nn.Sequential("), (3, "nn.Conv2d(3, 4, 1),"), (3, "nn.Module(),"), (2, ")"),
        (2, "self.features[1].conv = nn.Sequential("), (3, "nn.Sequential("), (4, "nn.Conv2d(4, 4, 3),"),
        (4, "nn.BatchNorm2d(4),"), (3, "),"), (3, "nn.Conv2d(4, 8, 1),"), (2, ")"),
        (2, "self.gammas_0 = nn.Parameter(torch.zeros((4,), dtype=torch.float32))")]
    assert "items set below" not in str(new_init)


def test_hugging_face_llama_is_one_block_class_keeps_the_source_state_dict_keys_verifies_and_reloads(tmp_path):
    pytest.importorskip("transformers")
    source, (ids,) = hf_llama(layers=4)
    result = portx.convert(source, out=tmp_path / "out", to="torch-xla", example_inputs=(ids,))  # verifies
    model, code = result.model, result.files["code"].read_text()
    assert list(model.state_dict()) and set(model.state_dict()) == set(source.state_dict())
    assert isinstance(model.get_submodule("model.layers.1.self_attn.q_proj"), torch.nn.Linear)
    # the nodes free dims prepend (the mask's counts) do not shift the layers' blocks (Note [blocks after free dims])
    assert isinstance(model.model.layers, torch.nn.ModuleList) and len(model.model.layers) == 4
    assert {type(layer).__name__ for layer in model.model.layers} == {"LlamaDecoderLayer"}
    assert code.count("(nn.Module):") == 2 and "for block in self.model.layers:" in code
    torch.save(model.state_dict(), tmp_path / "state.pt")
    fresh = type(model)()
    fresh.load_state_dict(torch.load(tmp_path / "state.pt"), strict=True)
    fresh.eval()
    with torch.no_grad():
        np.testing.assert_allclose(fresh(ids).numpy(), source(ids).logits.numpy(), rtol=1e-4, atol=1e-4)


def _keras_blocks():
    """Two Keras blocks as keras-hub's BERT writes them (``layer_0_*``) after its embeddings' Dropout, attention with
    dropout: the emitted attention reads ``dropout_p=0.1 if self.training else 0.0``."""
    import keras

    keras.utils.set_random_seed(0)
    x = keras.Input((4, 8))
    h = keras.layers.Dropout(0.1, name="embeddings_dropout")(x)
    for i in range(2):
        a = keras.layers.MultiHeadAttention(2, 4, dropout=0.1, name=f"layer_{i}_attention")(h, h)
        h = keras.layers.LayerNormalization(name=f"layer_{i}_norm")(keras.layers.Add(name=f"layer_{i}_add")([h, a]))
    return keras.Model(x, h)


def test_keras_blocks_reading_self_training_are_one_class(tmp_path):
    """``self.training`` is every module's own flag, no attribute of the model's that a block class could not
    read: a keras-hub BERT's layers were left flat for it."""
    from tests.support.structured_code import assert_structured

    result = portx.convert(_keras_blocks(), out=tmp_path / "out", to="torch-xla", grad=False)  # verifies
    assert assert_structured(result, "torch-xla")["defs"] == 1
    assert "self.training" in result.files["code"].read_text().split("class Model", 1)[0]


def test_a_separable_conv_is_one_module_where_its_two_convs_are_called_in_a_row():
    init = _rows("self.sepconv1_depthwise = nn.Conv2d(c, c, kernel_size=3, padding=1, groups=c, bias=False)",
                 "self.sepconv1_pointwise = nn.Conv2d(c, out_channels, kernel_size=1, bias=False)",
                 "self.sepconv1_bn = nn.BatchNorm2d(out_channels)")
    body = _rows("a = torch.relu(x)", "sepconv1_depthwise = self.sepconv1_depthwise(a)",
                 "sepconv1_pointwise = self.sepconv1_pointwise(sepconv1_depthwise)",
                 "bn = self.sepconv1_bn(sepconv1_pointwise)")
    paths = {"sepconv1_depthwise": "sepconv1.depthwise", "sepconv1_pointwise": "sepconv1.pointwise"}
    new_init, new_body = separable(*nest(init, body, paths)[:2])
    assert [text for _, text, _ in new_init] == [
        "self.sepconv1 = SeparableConv2d(c, out_channels, 3, padding=1, bias=False)",
        "self.sepconv1_bn = nn.BatchNorm2d(out_channels)"]
    assert [text for _, text, _ in new_body] == ["a = torch.relu(x)", "sepconv1 = self.sepconv1(a)",
                                                 "bn = self.sepconv1_bn(sepconv1)"]
    read_twice = body + _rows("y = sepconv1_depthwise + bn")  # the depthwise output read elsewhere: two convs stay
    assert separable(*nest(init, read_twice, paths)[:2])[1][1][1] == "sepconv1_depthwise = self.sepconv1.depthwise(a)"
    # the module has the children the state_dict keys name
    namespace = {"nn": torch.nn}
    exec(SEPARABLE, namespace)
    module = namespace["SeparableConv2d"](4, 8, 3, padding=1, bias=False)
    assert list(module.state_dict()) == ["depthwise.weight", "pointwise.weight"]
    assert module(torch.zeros(1, 4, 5, 5)).shape == (1, 8, 5, 5)
