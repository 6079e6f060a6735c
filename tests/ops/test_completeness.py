"""The op-family tests are complete: one folder per op family, each with its case table, and every registered
op with an emit rule for every target (or decomposed for both: Note [decompositions] in passes/legalize/decompose.py).

Both targets run every family test by construction (tests/ops/conftest.py parametrizes ``target``; the
harnesses have no default), so what is left to check is that the structure is there: a family folder under
tests/ops for each package under src/portx/ops, a ``CASES`` table of torch programs in its
``test_<family>.py`` that one test function runs, and ``ONE_TARGET`` entries that still name a test.
"""
import importlib
import pkgutil
from pathlib import Path

import pytest

import portx.ops
from portx.ir import REGISTRY
from tests.ops.conftest import ONE_TARGET
from tests.support.harness import TARGETS

FAMILIES = sorted(m.name for m in pkgutil.iter_modules(portx.ops.__path__) if m.ispkg)
HERE = Path(__file__).resolve().parent


def _family_modules(family):
    """The test modules of ``family``'s folder, imported by name (``tests.ops.conv.test_conv``, ...)."""
    return [importlib.import_module(f"tests.ops.{family}.{path.stem}")
            for path in sorted((HERE / family).glob("test_*.py"))]


def test_families_were_found():
    assert len(FAMILIES) >= 11, FAMILIES
    assert set(TARGETS) == {"keras-jax", "torch-xla"}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_a_folder_with_a_case_table(family):
    assert (HERE / family / "__init__.py").is_file(), f"no tests/ops/{family}/ package for src/portx/ops/{family}/"
    module = importlib.import_module(f"tests.ops.{family}.test_{family}")
    cases = getattr(module, "CASES", None)
    assert cases, f"tests/ops/{family}/test_{family}.py has no CASES table"
    ids = [row.id for row in cases]
    assert all(ids) and len(set(ids)) == len(ids), f"{family}: case ids must be unique and given: {ids}"


def test_every_test_folder_is_a_family():
    folders = {p.parent.name for p in HERE.glob("*/__init__.py")}
    assert folders <= set(FAMILIES), f"folders without an op family in src/portx/ops: {sorted(folders - set(FAMILIES))}"


def test_one_target_entries_name_a_family_test_and_a_target():
    names = {name for family in FAMILIES for module in _family_modules(family) for name in vars(module)}
    assert set(ONE_TARGET) <= names, f"stale ONE_TARGET entries: {sorted(set(ONE_TARGET) - names)}"
    assert all(target in TARGETS and reason for target, reason in ONE_TARGET.values()), ONE_TARGET


def test_every_registered_op_has_an_emit_rule(target):  # target: each of TARGETS, from conftest.py
    missing = sorted(name for name, op in REGISTRY.items() if target not in op.emit_rules and not op.has("decomposed"))
    assert not missing, f"ops without a {target} emit rule: {missing}"
