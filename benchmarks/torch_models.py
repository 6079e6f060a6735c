"""Reference torch models for the benchmarks: ResNet-50, MobileNetV2 and a wide MLP (random weights).

The two CNNs follow torchvision's definitions layer for layer (torchvision is not importable here),
so their parameter counts match the published ones: ResNet-50 25,557,032; MobileNetV2 3,504,872.

Example:
    >>> model = resnet50().eval()
    >>> model(torch.randn(1, 3, 224, 224)).shape
    torch.Size([1, 1000])
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["resnet50", "mobilenet_v2", "wide_mlp", "param_bytes"]


class Bottleneck(nn.Module):
    """ResNet bottleneck 1x1 -> 3x3 -> 1x1, expansion 4; v1.5 strides the 3x3, v1 the first 1x1."""

    expansion = 4

    def __init__(self, cin, width, stride=1, downsample=None, stride_in_1x1=False):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, stride if stride_in_1x1 else 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1 if stride_in_1x1 else stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    """torchvision.models.resnet50 (layers 3-4-6-3, 1000 classes); ``stride_in_1x1`` gives ResNet v1."""

    def __init__(self, classes=1000, stride_in_1x1=False):
        super().__init__()
        self.cin, self.stride_in_1x1 = 64, stride_in_1x1
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._stage(64, 3, 1)
        self.layer2 = self._stage(128, 4, 2)
        self.layer3 = self._stage(256, 6, 2)
        self.layer4 = self._stage(512, 3, 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def _stage(self, width, blocks, stride):
        cout = width * Bottleneck.expansion
        down = None
        if stride != 1 or self.cin != cout:
            down = nn.Sequential(nn.Conv2d(self.cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        layers = [Bottleneck(self.cin, width, stride, down, self.stride_in_1x1)]
        self.cin = cout
        layers += [Bottleneck(cout, width) for _ in range(blocks - 1)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _conv_bn_relu6(cin, cout, kernel=3, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    """MobileNetV2 block: optional 1x1 expand, 3x3 depthwise, linear 1x1 project; residual when shapes match."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = int(round(cin * expand))
        self.use_res = stride == 1 and cin == cout
        layers = [_conv_bn_relu6(cin, hidden, 1)] if expand != 1 else []
        layers += [_conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res else self.conv(x)


class MobileNetV2(nn.Module):
    """torchvision.models.mobilenet_v2 (width 1.0, 1000 classes, dropout 0.2 in the classifier)."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))

    def __init__(self, classes=1000):
        super().__init__()
        cin, layers = 32, [_conv_bn_relu6(3, 32, stride=2)]
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_conv_bn_relu6(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


def _init(model, seed):
    """Random weights (fixed seed) and non-trivial BatchNorm statistics, so folding BN is really tested."""
    torch.manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.1, 0.1)
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def resnet50(seed=0, stride_in_1x1=False) -> nn.Module:
    """ResNet-50 in eval mode with seeded random weights. Example: ``resnet50()(torch.randn(1, 3, 224, 224))``.

    The default is torchvision's v1.5 (stride in the 3x3 conv); ``stride_in_1x1=True`` is the original
    v1 (stride in the first 1x1 conv) that keras.applications.ResNet50 builds, with ~6% fewer FLOPs.
    """
    torch.manual_seed(seed)
    return _init(ResNet50(stride_in_1x1=stride_in_1x1), seed)


def mobilenet_v2(seed=0) -> nn.Module:
    """MobileNetV2 in eval mode with seeded random weights. Example: ``mobilenet_v2()(torch.randn(1, 3, 224, 224))``."""
    torch.manual_seed(seed)
    return _init(MobileNetV2(), seed)


def wide_mlp(width=4096, depth=18, seed=0) -> nn.Module:
    """A stack of ``depth`` Linear(width, width)+GELU layers; the default has 302M float32 parameters (1.21 GB).

    Example: ``wide_mlp(width=64, depth=2)(torch.randn(1, 64)).shape == (1, 64)``.
    """
    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*layers).eval()


def param_bytes(model) -> int:
    """Bytes of all parameters and buffers. Example: ``param_bytes(nn.Linear(2, 2)) == 24``."""
    return sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
