"""passes/blocks.py: which path component names a block (Note [outermost block]), single layers are no blocks
(Note [a block has parts]), Keras' naming forms (Note [lettered blocks], Note [numbered blocks in a stage])."""
from collections import OrderedDict

import pytest
import torch
from torch import nn

import portx
from portx.passes.blocks import block_of, block_parts


@pytest.mark.parametrize("scope, key", [
    ("encoder.layers.encoder_layer_0.mlp.0", "encoder.layers.encoder_layer_0"),  # torchvision's ViT
    ("encoder.layers.encoder_layer_11.ln_1", "encoder.layers.encoder_layer_11"),
    ("layer1.0.downsample.0", "layer1.0"),  # torchvision's ResNet: a number inside a block is a part of it
    ("m.model.layers.3.self_attn.q_proj", "m.model.layers.3"),  # Hugging Face
    ("conv2_block1_1_conv", "conv2_block1"),  # keras.applications
    ("transformer_layer_0.self_attention.query", "transformer_layer_0"),  # keras-hub
    ("blocks_0_ln1", "blocks_0"),  # portx's own Keras code: a torch path with underscores
    ("block2a_expand_conv", "block2a"),  # EfficientNet: a lettered block in a numbered stage
    ("expanded_conv_3_squeeze_excite_mul", "expanded_conv_3"),  # MobileNetV3
    ("expanded_conv_depthwise", ""),  # its first block has no number
    ("stem", ""),
])
def test_a_block_is_the_outermost_numbered_component(scope, key):
    assert block_of(scope) == key


def test_a_named_container_is_the_parent_of_its_blocks():
    assert block_parts("blocks_1") == {"parent": "blocks", "index": 1, "stem": "blocks_"}
    assert block_parts("encoder.layers.encoder_layer_2")["index"] == 2
    assert block_parts("block2b") == {"parent": "block2", "index": 1, "stem": "block2"}  # Note [lettered blocks]
    assert block_parts("layer1_0") == {"parent": "layer1", "index": 0, "stem": "layer1_"}


def _keras_stage(names):
    """A Keras model of two residual blocks named ``names(i, part)``, as portx writes a torch source's."""
    import keras

    x = inputs = keras.Input((8,))
    for i in range(2):
        h = keras.layers.Dense(8, name=names(i, "dense"))(x)
        h = keras.layers.ReLU(name=names(i, "relu"))(h)
        x = keras.layers.Add(name=names(i, ""))([x, h])
    return keras.Model(inputs, x)


@pytest.mark.parametrize("names, keys", [
    (lambda i, part: f"layer1_{i}_{part}".rstrip("_"), ["layer1_0", "layer1_1"]),  # portx's own names for layer1.0
    (lambda i, part: f"conv2_block{i + 1}_{part or 'out'}", ["conv2_block1", "conv2_block2"]),  # keras.applications
])
def test_portx_own_keras_names_number_the_blocks_of_a_stage(names, keys, tmp_path):
    """Note [numbered blocks in a stage]: ``layer1_0_dense`` is block 0 of ``layer1``, nested back as torch's."""
    result = portx.convert(_keras_stage(names), to="torch-xla", out=tmp_path / "o", verify=False)
    assert [b["key"] for b in result.graph.meta["blocks"]] == keys
    assert len({b["kind"] for b in result.graph.meta["blocks"]}) == 1


class _EncoderBlock(nn.Module):
    """torchvision's ViT EncoderBlock: its MLP an nn.Sequential (``mlp.0``, ``mlp.3``)."""

    def __init__(self, dim=8):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Dropout(0.0), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.ln_1(x)
        return x + self.mlp(self.ln_2(x))


class _Encoder(nn.Module):
    def __init__(self, depth=3):
        super().__init__()
        self.layers = nn.Sequential(OrderedDict((f"encoder_layer_{i}", _EncoderBlock()) for i in range(depth)))
        self.head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))  # single layers: no blocks

    def forward(self, x):
        return self.head(self.layers(x))


def test_torchvision_vit_blocks_are_its_encoder_layers(tmp_path):
    torch.manual_seed(0)
    result = portx.convert(_Encoder().eval(), example_inputs=(torch.randn(2, 5, 8),), to="torch-xla",
                           out=tmp_path / "o", verify=False)
    blocks = result.graph.meta["blocks"]
    assert [b["key"] for b in blocks] == [f"layers.encoder_layer_{i}" for i in range(3)]  # not mlp.0, mlp.3, head.0
    assert len({b["kind"] for b in blocks}) == 1
    # torch-xla keeps the source's state_dict keys: named children are held by name (Note [named block
    # containers] in targets/torch_xla/containers.py)
    assert set(result.model.state_dict()) == set(_Encoder().state_dict())
