"""torch-xla emitter: activations and residual adds overwrite a fresh operand in place (TorchEmitter.overwrite),
as hand-written PyTorch does, only where nothing else reads it, and the emitted module still trains."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from portx.frontends.torch import export_module, lower_exported
from portx.ir import GraphBuilder, TensorType
from portx.targets.torch_xla.emitter import emit_torch
from portx.targets.torch_xla.runtime import run_torch
from portx.verification.compare import compare_arrays, run_reference
from tests.support.harness import emit_and_load


class Residual(nn.Module):
    """conv -> bn -> relu twice with a residual add (ResNet's basic block), a relu6 and a silu head."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)
        self.bn1, self.bn2 = nn.BatchNorm2d(4), nn.BatchNorm2d(4)
        self.head = nn.Conv2d(4, 6, 1)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + y)
        return F.silu(self.head(F.relu6(y * 2.0)))


def _emitted(module, x, folder):
    module.eval()
    graph = lower_exported(export_module(module, [x]))
    files = emit_torch(graph, folder)
    return graph, files, files["code"].read_text()


def test_fresh_values_are_overwritten_and_outputs_match(tmp_path):
    torch.manual_seed(0)
    module, x = Residual(), torch.randn(2, 4, 8, 8)
    graph, files, code = _emitted(module, x, tmp_path)
    assert code.count("inplace=True)") == 3, code  # relu after bn1; relu after the add; silu after head
    assert ".add_(" in code, code  # bn2's output takes the residual
    relu6_line = next(line for line in code.splitlines() if "F.relu6(" in line)
    assert "inplace" not in relu6_line, relu6_line  # it reads a mul, which may keep its output
    with torch.no_grad():
        want = module(x).numpy()
    row = compare_arrays(want, run_torch(files["model"], [x.numpy()])[0], 1e-5, 1e-5)
    assert row["passed"], row
    overwritten = [n.op.name for n in graph.nodes if n.outputs[0] not in files["var_of"]]
    assert sorted(overwritten) == ["add", "batch_norm", "batch_norm", "conv"], overwritten


def test_emitted_module_trains_with_the_source_gradients(tmp_path):
    torch.manual_seed(0)
    module, x = Residual(), torch.randn(2, 4, 8, 8)
    _, files, _ = _emitted(module, x, tmp_path)
    grads = []
    for net, inp in ((module, x), (files["model"], x)):
        net.train()
        leaf = inp.clone().requires_grad_(True)
        (net(leaf) ** 2).sum().backward()  # autograd refuses an in-place write over a tensor it kept
        grads.append(leaf.grad.numpy())
    row = compare_arrays(grads[0], grads[1], 1e-4, 1e-4)
    assert row["passed"], row


def test_values_read_twice_inputs_and_outputs_are_not_overwritten(tmp_path):
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3)

        def forward(self, x):
            c = self.conv(torch.relu(x))  # relu of the graph input
            b = self.bn(c)
            return torch.relu(b) + torch.sigmoid(c), b  # c read twice; b is an output

    torch.manual_seed(0)
    _, files, code = _emitted(Shared(), torch.randn(1, 3, 4, 4), tmp_path)
    assert "inplace" not in code and "add_(" not in code, code


def test_dropout_is_skipped_at_inference_and_its_input_overwritten(tmp_path):
    rng = np.random.default_rng(0)
    b = GraphBuilder("drop")
    x = b.input("x", TensorType((2, 3, 4, 4), "float32"))
    w = b.param("conv.weight", rng.standard_normal((3, 3, 1, 1)).astype(np.float32))
    c = b.emit("conv", [x, w], {"stride": (1, 1), "pads": ((0, 0), (0, 0)), "dilation": (1, 1)}, "conv")
    d = b.emit("dropout", [c], {"rate": 0.5, "axes": (1, 2, 3)}, "drop")
    graph = b.finish([b.emit("add", [d, x], {}, "add")])
    model, code = emit_and_load(graph, tmp_path)
    assert "if self.training else conv" in code and "drop.add_(x)" in code, code
    arrays = [rng.standard_normal((2, 3, 4, 4)).astype(np.float32)]
    row = compare_arrays(run_reference(graph, arrays)[graph.outputs[0]], run_torch(model, arrays)[0], 1e-5, 1e-5)
    assert row["passed"], row
    model.train()
    dropped = model(torch.from_numpy(arrays[0])) - torch.from_numpy(arrays[0])  # whole samples are 0 or doubled
    assert dropped.shape == (2, 3, 4, 4)
