"""Op traits (``ir.opdef.TRAITS``, given in ``ops/traits.py``): every fact other stages ask of an op lives under
``ops/``; no module outside ``ops/`` and the frontends keeps its own set of IR op names."""
import ast

import pytest

import portx.ops  # noqa: F401  (registers every op and its traits)
from portx.ir import REGISTRY, lookup
from portx.ir.opdef import TRAITS
from portx.ops.traits import FAMILIES_WITH, OPS_WITH
from tests.support.paths import SRC


def test_every_listed_op_has_its_trait_and_no_other_op_does():
    for trait, names in OPS_WITH.items():
        assert trait in TRAITS
        assert {name for name, op in REGISTRY.items() if op.has(trait)} == set(names)


def test_every_op_of_a_listed_family_has_its_trait():
    for trait, families in FAMILIES_WITH.items():
        assert trait in TRAITS and trait not in OPS_WITH
        assert {name for name, op in REGISTRY.items() if op.has(trait)} == \
            {name for name, op in REGISTRY.items() if op.family in families}
    assert lookup("dropout").has("pointwise") and lookup("reshape").has("rearranging")
    assert not lookup("linear").has("pointwise") and not lookup("attention").has("rearranging")


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


FAMILIES = {op.family for op in REGISTRY.values()}


def _family_sets(path):
    """``x.family in ...`` (a set of families is a category of ops: a trait), and literal collections of two or more
    strings that are all op family names."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops) \
                and any(isinstance(s, ast.Attribute) and s.attr == "family" for s in [node.left, *node.comparators]):
            yield node.lineno, "family in ..."
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List)) and len(node.elts) >= 2 \
                and all(isinstance(e, ast.Constant) and e.value in FAMILIES for e in node.elts):
            yield node.lineno, [e.value for e in node.elts]


def test_no_family_sets_outside_ops():
    """A set of op families outside ``ops/`` is a fact about those ops kept elsewhere (sharding walked through
    ``{"elementwise", "dropout"}``): give the ops a trait in ``ops/traits.py`` (``FAMILIES_WITH``) instead."""
    found = [f"{p.relative_to(SRC)}:{line} {what}" for p in sorted(SRC.rglob("*.py"))
             if p.relative_to(SRC).parts[0] not in ("ops", "frontends", "ir") for line, what in _family_sets(p)]
    assert not found, f"op-family sets outside ops/ (make them a trait in ops/traits.py): {found}"


def test_the_family_scan_sees_a_membership_and_a_literal_set(tmp_path):
    code = tmp_path / "m.py"
    code.write_text('WALK = frozenset({"elementwise", "dropout"})\nok = node.op.family in WALK\n'
                    'one = node.op.family == "shape"\n')
    assert sorted(_family_sets(code), key=str) == [(1, ["elementwise", "dropout"]), (2, "family in ...")]
