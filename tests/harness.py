"""Op-level check used by every family table: torch vs IR reference vs emitted Keras.

``check_torch_op(fn_or_module, *inputs)`` lowers through the real torch frontend, validates the IR,
compares the NumPy references and the emitted Keras model against torch, and returns the graph.
"""
import os
import tempfile

import numpy as np
import torch

import portx  # noqa: F401  (registers ops)
from portx.emitters.keras_jax import emit_keras, import_emitted
from portx.frontends.torch import export_module, lower_exported
from portx.ir import validate
from portx.equivalence import compare_arrays, run_reference


class Wrap(torch.nn.Module):
    """Turns a plain function into a module so it can be exported."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def check_torch_op(fn, *inputs, atol=1e-5, rtol=1e-4, expect_ops=None, reference=True):
    """Lower ``fn(*inputs)`` and check IR reference and Keras output against torch. Returns the graph."""
    module = fn if isinstance(fn, torch.nn.Module) else Wrap(fn)
    module.eval()
    tensors = [torch.as_tensor(x) for x in inputs]
    with torch.no_grad():
        expected = [t.detach().numpy() for t in _flat(module(*tensors))]
    graph = validate(lower_exported(export_module(module, tensors)))
    if expect_ops is not None:
        ops = {n.op.name for n in graph.nodes}
        assert set(expect_ops) <= ops, f"expected ops {expect_ops}, graph has {sorted(ops)}"
    arrays = [t.numpy() for t in tensors]
    if reference:
        env = run_reference(graph, arrays)
        for value, want in zip(graph.outputs, expected):
            row = compare_arrays(want, env[value], atol, rtol)
            assert row["passed"], f"reference vs torch, output {value.name}: {row}"
    with tempfile.TemporaryDirectory() as tmp:
        emit_keras(graph, tmp)
        model = import_emitted(os.path.join(tmp, "model.py")).load_model()
        got = _flat(model(arrays if len(arrays) > 1 else arrays[0]))
    for value, want, have in zip(graph.outputs, expected, got):
        row = compare_arrays(want, np.asarray(have), atol, rtol)
        assert row["passed"], f"keras vs torch, output {value.name}: {row}"
    return graph
