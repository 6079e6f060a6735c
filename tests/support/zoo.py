"""The end-to-end model zoo: small, standard-shaped architectures built here with fixed seeds.

Each entry is a function returning (model in eval mode, example inputs). One model per family: MLP, ResNet,
MobileNetV3, EfficientNet, DenseNet, ConvNeXt, UNet, ViT, Swin, GPT and a text transformer encoder with a
padding mask. No torchvision (it does not import with this torch), nothing downloaded.
"""
import torch
import torch.nn.functional as F
from torch import nn

from tests.support.zoo_attention import GPTish, Swinish, TextEncoderish, ViTish

__all__ = ["ZOO"]


def _randomize_bn(model):
    """Give batch norms non-trivial statistics so verification exercises them."""
    gen = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) - 0.5)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)
    return model


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 64), nn.GELU(),
                                 nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + identity)


class ResNetish(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 16, 1))
        self.layer2 = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32, 1))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, exp, cout, stride, se):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(exp, exp, 3, stride, 1, groups=exp, bias=False),
                                       nn.BatchNorm2d(exp), nn.Hardswish())
        self.se = SqueezeExcite(exp) if se else nn.Identity()
        self.project = nn.Sequential(nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.use_res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.use_res else y


class MobileNetV3ish(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(InvertedResidual(16, 32, 16, 1, True), InvertedResidual(16, 48, 24, 2, False),
                                    InvertedResidual(24, 72, 24, 1, True))
        self.classifier = nn.Sequential(nn.Linear(24, 64), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1)
        return self.classifier(torch.flatten(x, 1))


def _double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True))


class UNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1, self.enc2, self.mid = _double_conv(3, 8), _double_conv(8, 16), _double_conv(16, 32)
        self.up1 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec1 = _double_conv(32, 16)
        self.dec2 = _double_conv(16 + 8, 8)
        self.head = nn.Conv2d(8 + 8, 2, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d1 = self.dec1(torch.cat([self.up1(m), e2], dim=1))
        up = F.interpolate(d1, scale_factor=2, mode="bilinear", align_corners=False)
        d2 = self.dec2(torch.cat([up, e1], dim=1))
        skip = F.interpolate(F.max_pool2d(e1, 2), scale_factor=2, mode="nearest")
        return self.head(torch.cat([d2, skip], dim=1))


class MBConv(nn.Module):
    """EfficientNet's block: 1x1 expand, depthwise kxk, squeeze-excite (SiLU then sigmoid gate), 1x1 project."""

    def __init__(self, cin, cout, expand, kernel, stride):
        super().__init__()
        mid, squeeze = cin * expand, max(1, cin // 4)
        self.expand = (nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU())
                       if expand != 1 else nn.Identity())
        self.depthwise = nn.Sequential(nn.Conv2d(mid, mid, kernel, stride, kernel // 2, groups=mid, bias=False),
                                       nn.BatchNorm2d(mid), nn.SiLU())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, squeeze, 1), nn.SiLU(),
                                nn.Conv2d(squeeze, mid, 1), nn.Sigmoid())
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.use_res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.depthwise(self.expand(x))
        y = self.project(y * self.se(y))
        return x + y if self.use_res else y


class EfficientNetish(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU())
        self.blocks = nn.Sequential(MBConv(16, 16, 1, 3, 1), MBConv(16, 24, 4, 3, 2), MBConv(24, 24, 4, 5, 1))
        self.head = nn.Sequential(nn.Conv2d(24, 64, 1, bias=False), nn.BatchNorm2d(64), nn.SiLU())
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DenseBlock(nn.Module):
    """DenseNet: each layer (BN-ReLU-1x1-BN-ReLU-3x3) reads the concatenation of every earlier output."""

    def __init__(self, layers, cin, growth):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, 4 * growth, 1, bias=False),
                          nn.BatchNorm2d(4 * growth), nn.ReLU(), nn.Conv2d(4 * growth, growth, 3, 1, 1, bias=False))
            for c in range(cin, cin + layers * growth, growth))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


class DenseNetish(nn.Module):
    def __init__(self, growth=8, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        c = 16 + 3 * growth
        self.block1, self.block2 = DenseBlock(3, 16, growth), DenseBlock(3, c // 2, growth)
        self.transition = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False),
                                        nn.AvgPool2d(2, 2))
        self.norm, self.fc = nn.BatchNorm2d(c // 2 + 3 * growth), nn.Linear(c // 2 + 3 * growth, classes)

    def forward(self, x):
        x = self.norm(self.block2(self.transition(self.block1(self.stem(x)))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(F.relu(x), 1), 1))


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor (ConvNeXt's stem and downsampling)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, LayerNorm over channels (channels-last), 4x MLP with GELU, layer scale, residual."""

    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1, self.pwconv2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.rand(dim) + 0.25)

    def forward(self, x):
        y = self.norm(self.dwconv(x).permute(0, 2, 3, 1))
        y = self.gamma * self.pwconv2(F.gelu(self.pwconv1(y)))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtish(nn.Module):
    def __init__(self, dims=(16, 32), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6))
        self.stage1, self.stage2 = ConvNeXtBlock(dims[0]), ConvNeXtBlock(dims[1])
        self.down = nn.Sequential(LayerNorm2d(dims[0], eps=1e-6), nn.Conv2d(dims[0], dims[1], 2, 2))
        self.norm, self.head = nn.LayerNorm(dims[1], eps=1e-6), nn.Linear(dims[1], classes)

    def forward(self, x):
        x = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(self.norm(x.mean((2, 3))))


def _build(cls, *inputs):
    def make():
        torch.manual_seed(0)
        return _randomize_bn(cls()).eval(), inputs
    return make


def _normal(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _padded_ids(vocab, lengths, ctx):
    """Token ids in 1..vocab-1, zero (padding) after each row's length."""
    ids = torch.randint(1, vocab, (len(lengths), ctx), generator=torch.Generator().manual_seed(0))
    return ids * (torch.arange(ctx) < torch.tensor(lengths)[:, None])


ZOO = {
    "mlp": _build(MLP, _normal(4, 32)),
    "resnet": _build(ResNetish, _normal(1, 3, 64, 64)),
    "mobilenetv3": _build(MobileNetV3ish, _normal(1, 3, 64, 64)),
    "efficientnet": _build(EfficientNetish, _normal(1, 3, 32, 32)),
    "densenet": _build(DenseNetish, _normal(1, 3, 32, 32)),
    "convnext": _build(ConvNeXtish, _normal(1, 3, 32, 32)),
    "unet": _build(UNetish, _normal(1, 3, 32, 32)),
    "vit": _build(ViTish, _normal(2, 3, 32, 32)),
    "swin": _build(Swinish, _normal(2, 3, 32, 32)),
    "gpt": _build(GPTish, torch.randint(0, 101, (2, 16), generator=torch.Generator().manual_seed(0))),
    "text_encoder": _build(TextEncoderish, _padded_ids(50, (8, 5), 12)),
}
