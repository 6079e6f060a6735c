"""torch-xla emit rules for linear (``nn.Linear``) and matmul (``torch.matmul``).

Example generated code:
    self.fc = nn.Linear(512, 10)
    fc = self.fc(flatten)
"""
from __future__ import annotations

from ..linear import LINEAR, MATMUL

__all__ = []


@LINEAR.emits("torch-xla")
def _linear_to_torch(node, t):
    x, w, b = (list(node.inputs) + [None])[:3]
    if not (t.ownable(w) and t.ownable(b)):  # computed or shared weights: F.linear
        t.assign(node, f"F.linear({t.ref(x)}, {t.ref(w)}" + (f", {t.ref(b)})" if b is not None else ")"))
        return
    out, n_in = w.type.shape
    weights = {"weight": w, **({"bias": b} if b is not None else {})}
    t.layer(node, "Linear", (n_in, out), {} if b is not None else {"bias": False}, weights, [x])


@MATMUL.emits("torch-xla")
def _matmul_to_torch(node, t):
    a, b = node.inputs
    t.assign(node, f"torch.matmul({t.ref(a)}, {t.ref(b)})")
