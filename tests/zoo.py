"""The end-to-end model zoo: small, standard-shaped architectures built here with fixed seeds.

Each entry is (constructor, example inputs). No torchvision, nothing downloaded.
"""
import torch
import torch.nn.functional as F
from torch import nn


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


class ViTish(nn.Module):
    def __init__(self, dim=32, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 8, stride=8)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 4, dim * 2, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), t], dim=1) + self.pos
        t = self.norm(self.encoder(t))
        return self.head(t[:, 0])


class GPTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPTish(nn.Module):
    def __init__(self, vocab=101, dim=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.Sequential(*[GPTBlock(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.tok.weight  # tied

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        return self.lm_head(self.ln_f(self.blocks(x)))


def _build(cls, *inputs):
    def make():
        torch.manual_seed(0)
        return _randomize_bn(cls()).eval(), inputs
    return make


ZOO = {
    "mlp": _build(MLP, torch.randn(4, 32, generator=torch.Generator().manual_seed(0))),
    "resnet": _build(ResNetish, torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))),
    "mobilenetv3": _build(MobileNetV3ish, torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))),
    "unet": _build(UNetish, torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))),
    "vit": _build(ViTish, torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))),
    "gpt": _build(GPTish, torch.randint(0, 101, (2, 16), generator=torch.Generator().manual_seed(0))),
}
