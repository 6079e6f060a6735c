"""What the gradient check differentiates is declared (frontends/base.py): each Source answers
``differentiable()`` and each Target names its ``framework``; verification/grads.py asks them and probes no
model's attributes."""
import ast

import keras
import torch
from torch import nn

from portx.frontends import load
from portx.frontends.base import KERAS, TORCH, Differentiable
from portx.session.report import Gradients
from portx.targets import TARGETS
from portx.verification.grads import compare_gradients
from tests.support.paths import SRC


def test_each_source_declares_what_it_differentiates(tmp_path):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).eval()
    x = torch.randn(2, 4)
    torch_src = load(net, example_inputs=(x,))
    assert torch_src.differentiable() == Differentiable(torch_src.module, TORCH)
    assert len(torch_src.examples()) == 1 and torch_src.stream_intermediates([x.numpy()]) is not None

    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
    keras_src = load(model)
    assert keras_src.differentiable() == Differentiable(model, KERAS)
    assert keras_src.examples() is None and keras_src.stream_intermediates([x.numpy()]) is None

    torch.onnx.export(net, (x,), str(tmp_path / "net.onnx"), dynamo=False)
    onnx_src = load(str(tmp_path / "net.onnx"))
    declared = onnx_src.differentiable()
    assert declared.model is None and declared.why == "the source cannot be differentiated here"
    assert onnx_src.examples() is None and onnx_src.stream_intermediates([x.numpy()]) is None
    skipped = compare_gradients(onnx_src, onnx_src.lower(), Differentiable(None, KERAS))
    assert isinstance(skipped, Gradients) and skipped.to_dict() == {"passed": None, "skipped": declared.why}


def test_each_target_names_the_framework_its_models_run_in():
    assert {name: target.framework for name, target in TARGETS.items()} == {"keras-jax": KERAS, "torch-xla": TORCH}


def test_verification_probes_no_source_or_model_attributes():
    """No ``hasattr(model, ...)`` / ``getattr(src, ..., None)`` in verification (the protocols say what a source or
    a converted model is: frontends/base.py)."""
    found = []
    for path in sorted((SRC / "verification").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.name}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")
                  and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in ("model", "src")]
    assert not found, found
