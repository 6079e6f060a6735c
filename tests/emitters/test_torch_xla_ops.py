"""Every op family's torch cases, run through the torch-xla emitter (tests/ops tables, reused).

The family tables in tests/ops call ``check_torch_op`` (torch vs the keras-jax emitter). Here each
parametrized case of those tables runs again with ``check_torch_op`` replaced by
``check_torch_xla_op`` (torch vs the emitted PyTorch module), so adding a case to a family table
covers both targets.
"""
import importlib.util
import inspect
from pathlib import Path

import pytest
from _pytest.mark.structures import ParameterSet

import harness_torch
from portx.ir import REGISTRY

OPS_TESTS = Path(__file__).resolve().parents[1] / "ops"


def _load(path):
    spec = importlib.util.spec_from_file_location(f"torch_xla_cases_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table_tests(module):
    """(name, function, parametrize mark) for table tests that call check_torch_op and need no fixture."""
    for name, fn in vars(module).items():
        if not name.startswith("test_") or not inspect.isfunction(fn) or hasattr(fn, "hypothesis"):
            continue
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        if len(marks) != 1 or "check_torch_op" not in fn.__code__.co_names:
            continue
        argnames = [a.strip() for a in marks[0].args[0].split(",")] if isinstance(marks[0].args[0], str) \
            else list(marks[0].args[0])
        if list(inspect.signature(fn).parameters) == argnames:
            yield name, fn, marks[0], len(argnames)


def _cases():
    for path in sorted(OPS_TESTS.glob("test_*.py")):
        module = _load(path)
        for name, fn, mark, arity in _table_tests(module):
            for i, row in enumerate(mark.args[1]):
                values = row.values if isinstance(row, ParameterSet) else (row,) if arity == 1 else tuple(row)
                marks = row.marks if isinstance(row, ParameterSet) else ()
                label = row.id if isinstance(row, ParameterSet) and row.id else str(i)
                yield pytest.param(module, fn, values, id=f"{path.stem[5:]}::{name[5:]}[{label}]", marks=marks)


CASES = list(_cases())


@pytest.mark.parametrize("module, fn, values", CASES)
def test_family_case_through_torch_xla(module, fn, values, monkeypatch):
    monkeypatch.setattr(module, "check_torch_op", harness_torch.check_torch_xla_op)
    fn(*values)


def test_cases_were_found():
    assert len(CASES) > 150, f"only {len(CASES)} family cases found in {OPS_TESTS}"


def test_every_registered_op_has_a_torch_xla_rule():
    missing = sorted(name for name, op in REGISTRY.items() if "torch-xla" not in op.emit_rules)
    assert not missing, f"ops without a torch-xla emit rule: {missing}"

