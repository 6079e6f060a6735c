"""torch-xla emit rules for the random ops: torch's own samplers on the global generator (``torch.manual_seed``).

Normal, uniform and integer draws are ``torch.randn_like`` / ``torch.rand_like`` / ``torch.randint_like``,
scaled and shifted; the other distributions transform a uniform draw ``u`` in [0, 1) as the Keras layer
does (ops/random/to_keras.py), which keeps to ops that torchax lowers for the TPU proof; ``multinomial`` is
``torch.multinomial``. A node without an input draws its ``shape`` with ``torch.randn`` / ``torch.rand`` /
``torch.randint`` / ``torch.randperm`` (a free dim read from an input, on the first input's device).

Example generated code:
    noise = torch.randn_like(x, dtype=torch.float32) * 1.0 + 0.0
    ids = torch.multinomial(probs, 2, replacement=False)
    rand = torch.rand((2, 3), dtype=torch.float32, device=x.device) * (1.0 - 0.0) + 0.0
"""
from __future__ import annotations

import math

from ..random import MULTINOMIAL, RANDOM

__all__ = []

#: distribution -> expression of ``{n}`` (a standard normal draw), ``{u}`` (uniform in [0, 1)), the params ``{a}``,
#: ``{b}`` and ``{c}`` = log1p(-a) (geometric)
_TEMPLATES = {
    "normal": "{n} * {b} + {a}",
    "uniform": "{u} * ({b} - {a}) + {a}",
    "log_normal": "torch.exp({n} * {b} + {a})",
    "cauchy": "{a} + {b} * torch.tan(3.141592653589793 * ({u} - 0.5))",
    "exponential": "-torch.log1p(-{u}) / {a}",
    "geometric": "torch.clamp(torch.ceil(torch.log1p(-{u}) / {c}), min=1.0)",
}


def _draws(node, t, x):
    """(randint, standard normal, uniform) calls: ``*_like(x)``, or of the node's ``shape`` when it has no input."""
    params = [float(p) for p in node.attrs["params"]]
    dtype = t.dtype(node.outputs[0].type.dtype)
    if x is not None:
        bounds = f"{int(params[0])}, {int(params[1])}" if node.attrs["distribution"] == "randint" else ""
        return (f"torch.randint_like({x}, {bounds}, dtype={dtype})", f"torch.randn_like({x}, dtype=torch.float32)",
                f"torch.rand_like({x}, dtype=torch.float32)")
    shape = t.lit(tuple(node.attrs["shape"]))
    device = f", device={t.ref(t.graph.inputs[0])}.device" if t.graph.inputs else ""
    if node.attrs["distribution"] == "permutation":
        return f"torch.randperm({shape}[0], dtype={dtype}{device})", "", ""
    bounds = f"{int(params[0])}, {int(params[1])}, " if node.attrs["distribution"] == "randint" else ""
    return (f"torch.randint({bounds}{shape}, dtype={dtype}{device})",
            f"torch.randn({shape}, dtype=torch.float32{device})", f"torch.rand({shape}, dtype=torch.float32{device})")


@RANDOM.emits("torch-xla")
def _random_to_torch(node, t):
    x = t.ref(node.inputs[0]) if node.inputs and node.inputs[0] is not None else None
    dtype = node.outputs[0].type.dtype
    dist, params = node.attrs["distribution"], [float(p) for p in node.attrs["params"]]
    integers, normal, uniform = _draws(node, t, x)
    if dist in ("randint", "permutation"):
        t.assign(node, integers)
        return
    a, b = (params + [0.0])[:2]
    draw = {"n": normal, "u": uniform}
    c = math.log1p(-a) if dist == "geometric" else 0.0
    expr = _TEMPLATES[dist].format(n=draw["n"], u=draw["u"], a=t.lit(a), b=t.lit(b), c=t.lit(c))
    t.assign(node, expr if dtype == "float32" else f"({expr}).to({t.dtype(dtype)})")


@MULTINOMIAL.emits("torch-xla")
def _multinomial_to_torch(node, t):
    a = node.attrs
    dtype = node.outputs[0].type.dtype
    expr = f"torch.multinomial({t.ref(node.inputs[0])}, {int(a['num_samples'])}, replacement={bool(a['replacement'])})"
    t.assign(node, expr if dtype == "int64" else f"{expr}.to({t.dtype(dtype)})")
