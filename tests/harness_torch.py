"""Op-level check for the torch-xla emitter: torch source vs the emitted PyTorch module.

``check_torch_xla_op(fn_or_module, *inputs)`` has ``check_torch_op``'s signature: it lowers
through the real torch frontend, emits ``model.py`` + ``model.safetensors``, loads them the way a
user would (``load_model()``), runs them and compares with torch. Returns the graph.
"""
import ast
import os
import tempfile

import numpy as np
import torch

import portx  # noqa: F401  (registers ops)
from harness import Wrap
from portx.emitters.torch_xla import emit_torch, import_emitted_torch, run_torch
from portx.equivalence import compare_arrays
from portx.frontends.torch import export_module, lower_exported
from portx.ir import validate

ALLOWED_IMPORTS = {"os", "torch", "torch.nn.functional", "safetensors.torch", "torch.nn", "math"}


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def imported_modules(code: str) -> set:
    """Every module an ``import`` or ``from ... import`` in ``code`` names."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names if node.module == "torch"}
    return found


def emit_and_load(graph, folder):
    """Emit ``graph`` into ``folder`` and return (the user's load_model() module, model.py text)."""
    files = emit_torch(graph, folder)
    code = files["code"].read_text()
    return import_emitted_torch(os.path.join(folder, "model.py")).load_model(), code


def check_torch_xla_op(fn, *inputs, atol=1e-5, rtol=1e-4, expect_ops=None, reference=True):
    """Lower ``fn(*inputs)``, emit PyTorch for torch-xla and compare it with torch. Returns the graph.

    ``reference`` is accepted for signature parity with ``check_torch_op`` (the op tables check
    the NumPy references already).
    """
    del reference
    module = fn if isinstance(fn, torch.nn.Module) else Wrap(fn)
    module.eval()
    tensors = [torch.as_tensor(x) for x in inputs]
    with torch.no_grad():
        expected = [t.detach().numpy() for t in _flat(module(*tensors))]
    graph = validate(lower_exported(export_module(module, tensors)))
    if expect_ops is not None:
        ops = {n.op.name for n in graph.nodes}
        assert set(expect_ops) <= ops, f"expected ops {expect_ops}, graph has {sorted(ops)}"
    with tempfile.TemporaryDirectory() as tmp:
        model, code = emit_and_load(graph, tmp)
        got = run_torch(model, [t.numpy() for t in tensors])
    assert imported_modules(code) <= ALLOWED_IMPORTS, f"model.py imports {sorted(imported_modules(code))}"
    assert len(got) == len(expected), f"{len(got)} outputs, torch has {len(expected)}"
    for value, want, have in zip(graph.outputs, expected, got):
        assert have.dtype == want.dtype, f"output {value.name}: dtype {have.dtype}, torch gives {want.dtype}"
        row = compare_arrays(want, np.asarray(have), atol, rtol)
        assert row["passed"], f"torch-xla vs torch, output {value.name}: {row}\n{code}"
    return graph
