"""The op-family tests in tests/ops cover the torch-xla target: every test there that runs
``check_torch_op`` is parametrized over ``harness.TARGETS`` (Note [both targets] in harness.py).

This file checks that promise from the test sources (so a new family test cannot quietly run on
one target only) and that every registered op has a torch-xla emit rule.
"""
import ast
from pathlib import Path

import pytest

from harness import TARGETS
from portx.ir import REGISTRY

OPS_TESTS = Path(__file__).resolve().parents[1] / "ops"

#: tests that run ``check_torch_op`` on one target on purpose: test name -> why
ONE_TARGET = {
    "test_zero_pad_on_spatial_axes_is_a_keras_layer": "reads the emitted Keras source for the layer it chose",
    "test_multi_tensor_indexing_is_refused": "the torch frontend refuses the program before any emitter runs",
}


def _calls_harness(fn) -> list:
    return [n for n in ast.walk(fn) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "check_torch_op"]


def _parametrizes_target(fn) -> bool:
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "pytest.mark.parametrize" and deco.args:
            if ast.unparse(deco.args[0]) == "'target'" and ast.unparse(deco.args[1]) == "TARGETS":
                return True
    return False


def _harness_tests():
    for path in sorted(OPS_TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_") and _calls_harness(fn):
                yield pytest.param(fn, id=f"{path.stem[5:]}::{fn.name[5:]}")


HARNESS_TESTS = list(_harness_tests())


@pytest.mark.parametrize("fn", HARNESS_TESTS)
def test_family_test_runs_on_every_target(fn):
    if fn.name in ONE_TARGET:
        return
    assert _parametrizes_target(fn), f"{fn.name} calls check_torch_op without " \
                                     f"@pytest.mark.parametrize(\"target\", TARGETS)"
    for call in _calls_harness(fn):
        passed = {k.arg: ast.unparse(k.value) for k in call.keywords}
        assert passed.get("target") == "target", f"{fn.name} line {call.lineno}: pass target=target"


def test_family_tests_were_found():
    assert len(HARNESS_TESTS) >= 30, f"only {len(HARNESS_TESTS)} harness tests found in {OPS_TESTS}"
    assert set(TARGETS) == {"keras-jax", "torch-xla"}
    names = {p.values[0].name for p in HARNESS_TESTS}
    assert set(ONE_TARGET) <= names, f"stale ONE_TARGET entries: {sorted(set(ONE_TARGET) - names)}"


def test_every_registered_op_has_a_torch_xla_rule():
    missing = sorted(name for name, op in REGISTRY.items() if "torch-xla" not in op.emit_rules)
    assert not missing, f"ops without a torch-xla emit rule: {missing}"
