"""passes/blocks.py: which path component names a block (Note [outermost block]), single layers are no blocks
(Note [a block has parts]), and Keras ops between a block's layers join it (Note [operations inside a block])."""
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
    ("stem", ""),
])
def test_a_block_is_the_outermost_numbered_component(scope, key):
    assert block_of(scope) == key


def test_a_named_container_is_the_parent_of_its_blocks():
    assert block_parts("blocks_1") == {"parent": "blocks", "index": 1, "stem": "blocks_"}
    assert block_parts("encoder.layers.encoder_layer_2")["index"] == 2


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
    # torch-xla keeps the source's state_dict keys: named children stay flat (block_args.named_child)
    assert set(result.model.state_dict()) == set(_Encoder().state_dict())
