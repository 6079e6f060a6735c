"""Op-level check used by every family table, for both targets: torch vs IR reference vs emitted model.

``check_torch_op(fn_or_module, *inputs, target=...)`` lowers through the real torch frontend,
validates the IR, compares the NumPy references with torch, runs the target's pass pipeline, emits
the target's files, loads them the way a user would (``load_model()``) and compares the emitted
model with torch and with the reference. Returns the (pre-pass) graph. ``target`` has no default:
every caller says which target it checks.

Family tests take ``target`` from ``TARGETS`` (Note [both targets]): tests/ops/conftest.py
parametrizes every family test that asks for ``target`` over both, so every case row and every
property runs on keras-jax and torch-xla from one definition. The Keras-source twin is
``keras_harness.check_keras_model``; both end in ``emit_and_run``.

Note [both targets]: a case is the same torch program and the same IR graph on both targets; only
the passes, the emitter and the loader differ (``emit_and_run``). Adding a row to a family table or
an example to a property therefore checks both emitters, and a wrong emit rule on either side fails
the family's own tests rather than a single cross-target case somewhere else.
"""
import ast
import contextlib
import os
import tempfile

import numpy as np
import torch

import portx  # noqa: F401  (registers ops)
import portx.targets
from portx.targets.codegen import import_by_path
from portx.targets.keras_jax.emitter import emit_keras
from portx.targets.torch_xla.emitter import emit_torch
from portx.targets.torch_xla.runtime import run_torch
from portx.verification.compare import compare_arrays, run_reference
from portx.frontends.torch import export_module, lower_exported
from portx.ir import validate
from portx.passes.pipeline import run_passes

__all__ = ["TARGETS", "ALLOWED_IMPORTS", "Wrap", "check_target", "check_torch_op", "compare_outputs", "emit_and_load",
           "emit_and_run", "expected_target", "imported_modules", "lower_torch"]

#: Every emitter target (``portx.targets.TARGETS``); family tests parametrize over these (Note [both targets]).
TARGETS = tuple(portx.targets.TARGETS)
#: What a torch-xla ``model.py`` may import: plain PyTorch, never portx, keras or torch_xla.
ALLOWED_IMPORTS = {"os", "torch", "torch.nn.functional", "safetensors.torch", "torch.nn", "math",
                   # tp_plan() imports torch's tensor-parallel styles when it is called (targets/torch_xla/sharding.py)
                   "torch.distributed.tensor", "torch.distributed.tensor.parallel"}
#: the target the running family test was parametrized with (set by tests/ops/conftest.py), or None elsewhere
_expected = [None]


@contextlib.contextmanager
def expected_target(target):
    """Within the block, the harnesses accept only ``target`` (``""``: none at all, for a test without one).

    tests/ops/conftest.py wraps every family test in it, so a family test cannot check a target it was not
    parametrized with (Note [both targets]).
    """
    _expected.append(target)
    try:
        yield
    finally:
        _expected.pop()


def check_target(target):
    """Refuse ``target`` inside a family test parametrized with another (or with none)."""
    want = _expected[-1]
    if want is not None and target != want:
        raise AssertionError(f"a family test checked target {target!r}; take a ``target`` argument and pass it "
                             f"on (tests/ops/conftest.py runs each target; ONE_TARGET lists the exceptions)")


class Wrap(torch.nn.Module):
    """Turns a plain function into a module so it can be exported."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def imported_modules(code: str) -> set:
    """Every module an ``import`` or ``from ... import`` in ``code`` names.

    Example: ``imported_modules("from torch import nn") == {"torch", "torch.nn"}``.
    """
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names if node.module == "torch"}
    return found


def lower_torch(fn, *inputs):
    """(graph, input arrays, torch's outputs) for ``fn(*inputs)`` through the real torch frontend.

    Example: ``graph, arrays, expected = lower_torch(torch.relu, torch.randn(2, 3))``.
    """
    module = fn if isinstance(fn, torch.nn.Module) else Wrap(fn)
    module.eval()
    tensors = [torch.as_tensor(x) for x in inputs]
    with torch.no_grad():
        expected = [t.detach().numpy() for t in _flat(module(*tensors))]
    graph = validate(lower_exported(export_module(module, tensors)))
    return graph, [t.numpy() for t in tensors], expected


def _run_keras(graph, arrays, folder):
    emit_keras(graph, folder)
    model = import_by_path(os.path.join(folder, "model.py")).load_model()
    return [np.asarray(o) for o in _flat(model(arrays if len(arrays) > 1 else arrays[0]))]


def _run_torch(graph, arrays, folder):
    model, code = emit_and_load(graph, folder)
    assert imported_modules(code) <= ALLOWED_IMPORTS, f"model.py imports {sorted(imported_modules(code))}"
    return run_torch(model, arrays)


def emit_and_run(graph, arrays, target):
    """Run ``target``'s passes on ``graph``, emit its files, load them as a user would and run them.

    Returns (outputs as NumPy arrays, the graph after the passes). Example:
    ``outputs, lowered = emit_and_run(graph, [x], "torch-xla")``.
    """
    check_target(target)
    graph = run_passes(graph, target)
    with tempfile.TemporaryDirectory() as tmp:
        return {"keras-jax": _run_keras, "torch-xla": _run_torch}[target](graph, arrays, tmp), graph


def emit_and_load(graph, folder):
    """Emit ``graph`` as torch-xla into ``folder``; return (the user's ``load_model()`` module, model.py text).

    Example: ``model, code = emit_and_load(graph, tmp_path)``; ``run_torch(model, arrays)`` runs it.
    """
    code = emit_torch(graph, folder)["code"].read_text()
    return import_by_path(os.path.join(folder, "model.py")).load_model(), code


def compare_outputs(target, graph, expected, got, atol, rtol, what):
    """Each of ``got`` (``target``'s outputs) within tolerance of ``expected`` (``what``'s), named by ``graph``'s
    outputs. Example: ``compare_outputs("torch-xla", graph, keras_outputs, torch_outputs, 1e-5, 1e-4, "keras")``."""
    assert len(got) == len(expected), f"{target}: {len(got)} outputs, {what} has {len(expected)}"
    for value, want, have in zip(graph.outputs, expected, got):
        row = compare_arrays(want, np.asarray(have), atol, rtol)
        assert row["passed"], f"{target} vs {what}, output {value.name}: {row}"


def _check_dtypes(target, lowered, got):
    """The emitted model gives the dtypes its graph declares after the passes (which narrow float64, and
    int64 for keras-jax, on purpose: passes/legalize/dtypes.py); the values are compared with torch's either way."""
    for value, have in zip(lowered.outputs, got):
        assert str(have.dtype) == value.type.dtype, f"{target}, output {value.name}: dtype {have.dtype}, " \
                                                    f"the graph declares {value.type.dtype}"


def check_torch_op(fn, *inputs, target, atol=1e-5, rtol=1e-4, expect_ops=None, reference=True):
    """Lower ``fn(*inputs)``; check the IR reference against torch, then ``target``'s emitted model against
    torch and against the reference. Returns the graph.

    Example: ``check_torch_op(nn.Linear(4, 3), torch.randn(2, 4), target="torch-xla", expect_ops=["linear"])``.
    """
    graph, arrays, expected = lower_torch(fn, *inputs)
    if expect_ops is not None:
        ops = {n.op.name for n in graph.nodes}
        assert set(expect_ops) <= ops, f"expected ops {expect_ops}, graph has {sorted(ops)}"
    for value, want in zip(graph.outputs, expected):
        assert value.type.dtype == str(want.dtype), f"output {value.name}: the graph declares {value.type.dtype}, " \
                                                    f"torch gives {want.dtype}"
    refs = None
    if reference:
        env = run_reference(graph, arrays)
        refs = [env[v] for v in graph.outputs]
        for value, want, have in zip(graph.outputs, expected, refs):
            row = compare_arrays(want, have, atol, rtol)
            assert row["passed"], f"reference vs torch, output {value.name}: {row}"
    got, lowered = emit_and_run(graph, arrays, target)
    _check_dtypes(target, lowered, got)
    compare_outputs(target, graph, expected, got, atol, rtol, "torch")
    if refs is not None:
        compare_outputs(target, graph, refs, got, atol, rtol, "reference")
    return graph
