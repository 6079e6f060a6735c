"""Op facts live under ``ops/`` (STYLE 2): outside it, no code compares an op's name with a string literal or keeps
a collection of op names; it asks the ``OpDef`` (``node.op is CAST``, ``node.op.has("mask_reader")``).

Read from the source with ``ast``. A string that names a registered op counts where it is compared with something
spelled ``op`` (``node.op.name == "cast"``, ``row["op"] == "batch_norm"``), sits in a set, tuple or list with
another op name, or keys a dict with another (a table of op facts). Names the outside world supplies (ATen, JAX
primitives, ONNX op types) live in frontends/ and are not scanned.
"""
import ast

import pytest

from portx import ops  # noqa: F401  (registers every op)
from portx.ir.opdef import REGISTRY
from tests.support.paths import SRC

#: the op named "shape" is also a family and a common word; the other names are checked
NAMES = set(REGISTRY) - {"shape"}
#: every module outside ``ops/`` and ``frontends/`` (the stages, api, cli, testing, weights, outputs, ir)
SCANNED = sorted(p for p in SRC.rglob("*.py") if p.relative_to(SRC).parts[0] not in ("ops", "frontends"))


def _op_strings(path) -> list:
    text = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [s.value for s in sides if isinstance(s, ast.Constant) and s.value in NAMES]
            rest = ast.get_source_segment(text, node).replace(f'"{named[0]}"', "") if named else ""
            if named and ("op" in rest or "name" in rest):
                found.append(f"{node.lineno}: {ast.get_source_segment(text, node)}")
            members = [s for s, o in zip(node.comparators, node.ops) if isinstance(o, (ast.In, ast.NotIn))
                       and isinstance(s, (ast.Tuple, ast.List))]
        elif isinstance(node, ast.Set):
            members = [node]
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and k.value in NAMES]
            found += [f"{node.lineno}: keys {keys}"] if len(keys) >= 2 else []
            continue
        else:
            continue
        for held in members:
            named = [e.value for e in held.elts if isinstance(e, ast.Constant) and e.value in NAMES]
            if named and len(named) == len(held.elts):
                found.append(f"{held.lineno}: {named}")
    return found


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(SRC)))
def test_no_op_names_outside_ops(path):
    found = _op_strings(path)
    assert not found, f"{path.relative_to(SRC)} names ops by string; ask the OpDef instead:\n" + "\n".join(found)


def test_the_scan_sees_a_name_compared_and_a_set_of_names(tmp_path):
    code = tmp_path / "m.py"
    code.write_text('if node.op.name == "cast":\n    pass\nKEEP = {"add", "mul"}\nOK = node.op is CAST\n'
                    'PARTS = ("cos", "sin")\nif name in ("add", "sub"):\n    pass\nWORDS = {"permute": "t", "attention": "c"}\n')
    assert _op_strings(code) == ['1: node.op.name == "cast"', "3: ['add', 'mul']", "6: ['add', 'sub']",
                                 "8: keys ['permute', 'attention']"]
