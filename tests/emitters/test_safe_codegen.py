"""Names from model files never subvert generated code (Note [untrusted names])."""
import ast

import torch
from torch import nn

import portx

EVIL = [
    "a'); open('{m}', 'w'); ('",  # torch refuses '.' in module names, so payloads avoid it
    'b"""\nopen("{m}", "w")\n"""',
    "c\\\nopen('{m}', 'w')#",
    "class", "print", "lambda", "None", "λayer_ünïcode", "x" * 300, "1starts_with_digit", "__dunder__", "dup", "dup_",
]


class Evil(nn.Module):
    def __init__(self, marker):
        super().__init__()
        self.names = []
        for i, raw in enumerate(EVIL):
            name = raw.format(m=marker)
            self.add_module(name, nn.Linear(4, 4))
            self.names.append(name)

    def forward(self, x):
        for name in self.names:
            x = torch.relu(getattr(self, name)(x))
        return x


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
    assert imported <= {"os", "sys", "keras", "numpy", "layers", "ops", "jax"}
    assert not marker.exists()
    assert max(len(line) for line in code.splitlines()) < 400
