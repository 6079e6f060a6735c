"""Project rules from STYLE.md that a machine can check: file sizes, public modules declare __all__."""
import ast

import pytest

from tests.support.paths import SRC

FILES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_file_is_at_most_400_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 400, f"{path.name} has {lines} lines; split it by responsibility (STYLE.md section 6)"


@pytest.mark.parametrize("path", [p for p in FILES if not p.name.startswith("_") or p.name == "__init__.py"],
                         ids=lambda p: str(p.relative_to(SRC)))
def test_public_module_declares_all(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name)}
    if path.name == "__init__.py" and len(tree.body) <= 1:
        return  # a docstring-only package marker
    assert "__all__" in names, f"{path.relative_to(SRC)} declares no __all__"
