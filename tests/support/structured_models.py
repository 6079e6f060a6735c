"""Small models whose blocks repeat, for the structured-code golden files (tests/targets/*/test_golden*.py) and
benchmarks/emitted_lines.py: a torchvision-style ResNet (Bottleneck blocks in ``layer1``..), a ViT (pre-norm
blocks in ``blocks``), the Llama-shaped decoder of tiny_llama.py, a Hugging Face ``LlamaForCausalLM`` (its mask
and rotary glue made before the layers, ``hf_llama``), and a keras.applications-style ResNet (layers
named ``conv2_block1_1_conv`` by ``block1(x, filters, stride, name)``, as keras.applications writes them).

Example: ``model, (x,) = small_resnet()``.
"""
from collections import OrderedDict

import torch
from torch import nn

from tests.support.tiny_llama import tiny_llama

__all__ = ["Bottleneck", "ResNet", "small_resnet", "small_vit", "torchvision_vit", "small_decoder", "keras_resnet"]


class Bottleneck(nn.Module):
    """torchvision's Bottleneck: 1x1, 3x3 (stride), 1x1 to 4x the width, a projection shortcut where needed."""

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv2, self.bn2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
        self.conv3, self.bn3 = nn.Conv2d(planes, planes * 4, 1, bias=False), nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes * 4:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    """torchvision's ResNet layout: stem, ``layer1``..``layerN`` of Bottlenecks, average pool, ``fc``."""

    def __init__(self, layers=(3, 4, 6, 3), width=64, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(width), nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inplanes = width
        for i, count in enumerate(layers):
            planes = width * 2 ** i
            blocks = [Bottleneck(inplanes, planes, 1 if i == 0 else 2)]
            blocks += [Bottleneck(planes * 4, planes) for _ in range(count - 1)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
            inplanes = planes * 4
        self.stages = len(layers)
        self.fc = nn.Linear(inplanes, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(self.stages):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def small_resnet(layers=(2, 2), width=4, size=32):
    """(a seed-0 ResNet in eval mode, (an input of shape (1, 3, size, size),)); ResNet-50 is layers=(3, 4, 6, 3),
    width=64."""
    torch.manual_seed(0)
    return ResNet(layers, width, 10).eval(), (torch.randn(1, 3, size, size),)


class ViTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """Patches, a class token, learned positions, pre-norm blocks, the class token's head."""

    def __init__(self, dim=16, depth=3, heads=2, patch=4, size=16, classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, dim))
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


def small_vit():
    """(a seed-0 ViT in eval mode, (an input of shape (1, 3, 16, 16),))."""
    torch.manual_seed(0)
    return ViT().eval(), (torch.randn(1, 3, 16, 16),)


class EncoderBlock(nn.Module):
    """torchvision's ViT EncoderBlock: pre-norm attention and an MLP numbered as torchvision's MLPBlock
    (``mlp.0``, ``mlp.3``)."""

    def __init__(self, heads, dim, mlp_dim):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, dropout=0.0, batch_first=True)
        self.dropout = nn.Dropout(0.0)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp_dim, dim),
                                 nn.Dropout(0.0))

    def forward(self, x):
        h = self.ln_1(x)
        h, _ = self.self_attention(h, h, h, need_weights=False)
        x = self.dropout(h) + x
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """torchvision's ViT Encoder: its layers named children of an nn.Sequential (``layers.encoder_layer_0``)."""

    def __init__(self, seq, layers, heads, dim, mlp_dim):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq, dim).normal_(std=0.02))
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.Sequential(OrderedDict((f"encoder_layer_{i}", EncoderBlock(heads, dim, mlp_dim))
                                                for i in range(layers)))
        self.ln = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class VisionTransformer(nn.Module):
    """torchvision.models.VisionTransformer's layout (``conv_proj``, ``class_token``, ``encoder``, ``heads.head``),
    built here: torchvision is not a dependency."""

    def __init__(self, size=16, patch=4, layers=3, heads=2, dim=16, mlp_dim=32, classes=10):
        super().__init__()
        self.patch, self.dim = patch, dim
        self.conv_proj = nn.Conv2d(3, dim, patch, patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.encoder = Encoder((size // patch) ** 2 + 1, layers, heads, dim, mlp_dim)
        self.heads = nn.Sequential(OrderedDict([("head", nn.Linear(dim, classes))]))

    def forward(self, x):
        n = x.shape[0]
        x = self.conv_proj(x).reshape(n, self.dim, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


def torchvision_vit(layers=3):
    """(a seed-0 torchvision-layout ViT with ``layers`` encoder layers, in eval mode, (an input (1, 3, 16, 16),))."""
    torch.manual_seed(0)
    return VisionTransformer(layers=layers).eval(), (torch.randn(1, 3, 16, 16),)


def small_decoder(layers=3):
    """(tiny_llama's decoder with ``layers`` blocks, (token ids,))."""
    return tiny_llama(batch=1, layers=layers)


def hf_llama(layers=4):
    """(a tiny Hugging Face ``LlamaForCausalLM`` with ``layers`` decoder layers, random weights, seed 0, in eval
    mode, (token ids of shape (1, 8),)). Needs transformers; nothing downloads."""
    import transformers

    config = transformers.LlamaConfig(hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                                      num_key_value_heads=1, intermediate_size=64, vocab_size=100,
                                      max_position_embeddings=64, use_cache=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    return model, (torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(0)),)


def keras_resnet(stages=(2, 2), width=4, size=16):
    """A keras.applications-style ResNet (``block1`` and ``stack1`` of keras/applications/resnet.py, smaller),
    seed 0."""
    import keras
    from keras import layers

    def block1(x, filters, stride=1, conv_shortcut=True, name=None):
        if conv_shortcut:
            shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
            shortcut = layers.BatchNormalization(epsilon=1.001e-5, name=name + "_0_bn")(shortcut)
        else:
            shortcut = x
        x = layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
        x = layers.BatchNormalization(epsilon=1.001e-5, name=name + "_1_bn")(x)
        x = layers.Activation("relu", name=name + "_1_relu")(x)
        x = layers.Conv2D(filters, 3, padding="SAME", name=name + "_2_conv")(x)
        x = layers.BatchNormalization(epsilon=1.001e-5, name=name + "_2_bn")(x)
        x = layers.Activation("relu", name=name + "_2_relu")(x)
        x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
        x = layers.BatchNormalization(epsilon=1.001e-5, name=name + "_3_bn")(x)
        x = layers.Add(name=name + "_add")([shortcut, x])
        return layers.Activation("relu", name=name + "_out")(x)

    keras.utils.set_random_seed(0)
    inputs = keras.Input((size, size, 3), name="input_layer")  # a fixed name: Keras numbers unnamed ones per process
    x = layers.Conv2D(width, 3, padding="same", name="conv1_conv")(inputs)
    x = layers.Activation("relu", name="conv1_relu")(x)
    for i, count in enumerate(stages):
        name = f"conv{i + 2}"
        x = block1(x, width * 2 ** i, stride=1 if i == 0 else 2, name=name + "_block1")
        for b in range(2, count + 1):
            x = block1(x, width * 2 ** i, conv_shortcut=False, name=f"{name}_block{b}")
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    return keras.Model(inputs, layers.Dense(10, name="predictions")(x), name="resnet")
