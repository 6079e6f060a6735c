"""Op traits (``ir.opdef.TRAITS``, given in ``ops/traits.py``): every fact other stages ask of an op lives under
``ops/``; no module outside ``ops/`` and the frontends keeps its own set of IR op names."""
import ast

import pytest

import portx.ops  # noqa: F401  (registers every op and its traits)
from portx.ir import REGISTRY, lookup
from portx.ir.opdef import TRAITS
from portx.ops.traits import OPS_WITH
from tests.support.paths import SRC


def test_every_listed_op_has_its_trait_and_no_other_op_does():
    for trait, names in OPS_WITH.items():
        assert trait in TRAITS
        assert {name for name, op in REGISTRY.items() if op.has(trait)} == set(names)


def test_an_unknown_trait_is_a_key_error():
    with pytest.raises(KeyError, match="unknown op trait 'fresh'"):
        lookup("conv").has("fresh")


def _op_name_sets(path):
    """Literal sets, frozensets and tuples of three or more strings that are all IR op names."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) >= 3 \
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts) \
                and all(e.value in REGISTRY for e in node.elts):
            yield node.lineno, [e.value for e in node.elts]


def test_no_op_name_sets_outside_ops():
    owners = ("ops", "frontends")  # frontends name their sources' ops, which may share an IR op's name
    found = [f"{p.relative_to(SRC)}:{line} {names[:4]}..." for p in sorted(SRC.rglob("*.py"))
             if p.relative_to(SRC).parts[0] not in owners for line, names in _op_name_sets(p)]
    assert not found, f"op-name sets outside ops/ (make them a trait in ops/traits.py): {found}"
