"""Names from model files never subvert the generated Keras code (Note [untrusted names])."""
import ast

import torch

import portx
from tests.support.hostile_names import Evil


def test_injection_attempts_yield_plain_importable_code(tmp_path):
    marker = tmp_path / "MARKER"
    model = Evil(str(marker)).eval()
    result = portx.convert(model, example_inputs=(torch.randn(2, 4),), out=tmp_path / "out")
    assert result.report["verification"]["passed"]
    code = result.files["code"].read_text()
    tree = ast.parse(code)
    calls = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
             for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not calls & {"open", "system", "__import__", "exec", "eval"}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert imported <= {"os", "sys", "keras", "numpy", "layers", "ops", "jax", "warnings"}  # layout_map warns
    assert not marker.exists()
    assert max(len(line) for line in code.splitlines()) < 400
