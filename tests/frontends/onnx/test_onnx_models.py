"""Whole ONNX models exported by torch (the dynamo exporter and the classic ``dynamo=False`` one), converted
to both targets with verification against onnxruntime.

Every model is built here with a fixed seed; nothing downloads.
"""
import warnings

import onnx
import pytest
import torch
from onnx import numpy_helper

import portx
from portx.frontends import load
from tests.support.harness import TARGETS

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")


class SmallCNN(torch.nn.Module):
    """conv, batch norm, relu, max pool, average pool, linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Block(torch.nn.Module):
    """A tiny transformer block over token ids: embedding (Gather), LayerNorm, MatMul, Softmax, GELU MLP."""

    def __init__(self, vocab=50, dim=16, heads=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))
        self.heads = heads

    def forward(self, ids):
        x = self.embed(ids)
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.norm2(x))


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32), torch.nn.Sigmoid(),
                               torch.nn.Linear(32, 3), torch.nn.LogSoftmax(dim=-1))


def export(module, args, path, dynamo, dynamic=None):
    """``torch.onnx.export`` quietly; ``dynamic``: {input name: {axis: name}} (the classic exporter's form)."""
    torch.manual_seed(0)
    names = [f"in{i}" for i in range(len(args))] if dynamic is None else list(dynamic)
    kwargs = {"dynamo": dynamo, "input_names": names}
    if dynamic and dynamo:
        kwargs["dynamic_shapes"] = tuple({a: torch.export.Dim(n, min=1, max=64) for a, n in dims.items()}
                                         for dims in dynamic.values())
    elif dynamic:
        kwargs["dynamic_axes"] = dynamic
    else:
        kwargs["opset_version"] = 17 if not dynamo else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), args, str(path), **{k: v for k, v in kwargs.items() if v is not None})
    return path


def _converted(path, target, tmp_path, **options):
    result = portx.convert(str(path), to=target, out=tmp_path / f"out-{target}", grad=False, **options)
    assert result.ok, result.report["verification"]
    assert result.report["verification"]["passed"] is True
    return result


def _seeded(module):
    torch.manual_seed(0)
    return module.eval()


@pytest.mark.parametrize("target", TARGETS)
def test_small_cnn_classic_exporter(tmp_path, target):
    torch.manual_seed(0)
    model = _seeded(SmallCNN())
    with torch.no_grad():  # non-trivial batch-norm statistics
        model.bn1.running_mean.uniform_(-0.5, 0.5)
        model.bn1.running_var.uniform_(0.5, 2.0)
    path = export(model, (torch.randn(2, 3, 16, 16),), tmp_path / "cnn.onnx", dynamo=False)
    result = _converted(path, target, tmp_path)
    assert max(row["max_abs"] for row in result.report["verification"]["outputs"]) < 1e-4
    floats = [numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer if t.data_type == 1]
    params = load(str(path)).lower().params  # every float initializer is a parameter, under its own name
    assert sum(a.size for a in params.values() if a.dtype.kind == "f") == sum(a.size for a in floats)
    assert "fc.weight" in params and params["fc.weight"].shape == (10, 8)


@pytest.mark.parametrize("target", TARGETS)
def test_mlp_dynamo_exporter_with_external_data(tmp_path, target):
    """The dynamo exporter writes ``model.onnx.data`` next to the model: read through the safe path."""
    path = export(_seeded(_mlp()), (torch.randn(4, 12),), tmp_path / "mlp.onnx", dynamo=True)
    assert path.with_name("mlp.onnx.data").exists()
    _converted(path, target, tmp_path)


@pytest.mark.parametrize("target", TARGETS)
def test_transformer_block(tmp_path, target):
    ids = torch.randint(0, 50, (2, 6))
    path = export(_seeded(Block()), (ids,), tmp_path / "block.onnx", dynamo=False)
    _converted(path, target, tmp_path)
    ops = {n.op.name for n in load(str(path)).lower().nodes}
    assert {"embedding", "layer_norm", "softmax", "matmul", "erf"} <= ops, ops  # opset 17 writes GELU with Erf


@pytest.mark.parametrize("target", TARGETS)
def test_dynamic_batch_axis_stays_free(tmp_path, target):
    """A ``dim_param`` batch is a free dim: converted once, verified at other batch sizes too."""
    path = export(_seeded(_mlp()), (torch.randn(3, 12),), tmp_path / "dyn.onnx", dynamo=False,
                  dynamic={"x": {0: "batch"}})
    result = _converted(path, target, tmp_path)
    rows = result.report["dynamic"]
    assert rows and rows[0]["symbol"] == "batch" and rows[0]["free"], rows
    assert {c["size"] for c in rows[0]["verified"]} >= {1, 8}
