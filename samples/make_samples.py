"""Regenerates the bundled samples (fixed seeds, random weights; nothing is downloaded).

Run: .venv/bin/python samples/make_samples.py
"""
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent


class TinyCNN(nn.Module):
    """A small image classifier: conv-bn-relu blocks, a residual add, pooling and a linear head."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, padding=1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(x + self.block(x))
        return self.head(torch.flatten(self.pool(x), 1))


def main():
    torch.manual_seed(0)
    model = TinyCNN().eval()
    for m in model.modules():  # non-trivial batch-norm statistics, so the check means something
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    batch = torch.export.Dim("batch", min=1, max=1024)  # a free batch: the converted model serves any batch
    ep = torch.export.export(model, (torch.randn(2, 3, 32, 32),), dynamic_shapes={"x": {0: batch}})
    torch.export.save(ep, HERE / "tiny_cnn.pt2")
    print("wrote", HERE / "tiny_cnn.pt2")


if __name__ == "__main__":
    main()
