"""torch-xla emit rules for reductions and softmax: ``torch.sum(x, dim=(2, 3))`` and friends.

The IR's result dtypes are torch's (sums of integers are int64, argmax int64), so every call is
the torch function of the same name; ``prod`` takes one dim at a time in torch, so several axes
are chained.

Example generated code:
    mean = torch.mean(relu, dim=(2, 3))
    softmax = torch.softmax(linear, dim=-1)
"""
from __future__ import annotations

from .._util import forward, named_rule
from ..reduce import CUMSUM, ARGMAX, ARGMIN, LOG_SOFTMAX, REDUCE, SOFTMAX, STD, VAR, VECTOR_NORM

__all__ = []

_FUNCTIONS = {"sum": "torch.sum", "mean": "torch.mean", "amax": "torch.amax", "amin": "torch.amin",
              "any": "torch.any", "all": "torch.all", "logsumexp": "torch.logsumexp", "prod": "torch.prod"}


def _where(t, node) -> str:
    """``dim=..., keepdim=True`` for a reduction node (one int for a single axis)."""
    axes = tuple(node.attrs["axes"])
    dim = axes[0] if len(axes) == 1 else axes
    return f"dim={t.lit(dim)}" + (", keepdim=True" if node.attrs["keepdims"] else "")


def _reduce_rule(name):
    def emit(node, t):
        x, axes = t.ref(node.inputs[0]), tuple(node.attrs["axes"])
        keep = ", keepdim=True" if node.attrs["keepdims"] else ""
        if name == "prod" and (not axes or len(axes) == node.inputs[0].type.rank and not keep):
            t.assign(node, f"torch.prod({x})")
            return
        if name == "prod" and len(axes) != 1:  # torch.prod reduces one dim per call
            expr = x
            for axis in sorted(axes, reverse=True):
                expr = f"torch.prod({expr}, dim={axis}{keep})"
            t.assign(node, expr)
            return
        t.assign(node, f"{_FUNCTIONS[name]}({x}, {_where(t, node)})")
    return named_rule(emit, name, "to_torch")


for _name, _op in REDUCE.items():
    _op.emits("torch-xla")(_reduce_rule(_name))


def _arg_rule(fn):
    def emit(node, t):
        axis, keep = node.attrs["axis"], node.attrs["keepdims"]
        where = (f", dim={axis}" if axis is not None else "") + (", keepdim=True" if keep else "")
        x = t.ref(node.inputs[0]) + (".int()" if node.inputs[0].type.dtype == "bool" else "")  # no bool argmax
        t.assign(node, f"{fn}({x}{where})")
    return named_rule(emit, fn.split(".")[-1], "to_torch")


ARGMAX.emits("torch-xla")(_arg_rule("torch.argmax"))
ARGMIN.emits("torch-xla")(_arg_rule("torch.argmin"))


def _moment_rule(fn):
    def emit(node, t):
        correction = float(node.attrs["correction"])
        number = int(correction) if correction.is_integer() else correction
        text = "" if correction == 1 else f", correction={t.lit(number)}"
        t.assign(node, f"{fn}({t.ref(node.inputs[0])}, {_where(t, node)}{text})")
    return named_rule(emit, fn.split(".")[-1], "to_torch")


VAR.emits("torch-xla")(_moment_rule("torch.var"))
STD.emits("torch-xla")(_moment_rule("torch.std"))


@VECTOR_NORM.emits("torch-xla")
def _vector_norm_to_torch(node, t):
    order = float(node.attrs["ord"])
    text = "" if order == 2 else f"ord={t.lit(order)}, "
    t.assign(node, f"torch.linalg.vector_norm({t.ref(node.inputs[0])}, {text}{_where(t, node)})")


@SOFTMAX.emits("torch-xla")
def _softmax_to_torch(node, t):
    x = node.inputs[0]
    t.assign(node, f"torch.softmax({t.ref(x)}, dim={_signed_axis(node.attrs['axis'], x.type.rank)})")


@LOG_SOFTMAX.emits("torch-xla")
def _log_softmax_to_torch(node, t):
    x = node.inputs[0]
    t.assign(node, f"torch.log_softmax({t.ref(x)}, dim={_signed_axis(node.attrs['axis'], x.type.rank)})")


def _signed_axis(axis, rank) -> int:
    """``-1`` for the last axis, as softmax calls are usually written."""
    return -1 if axis == rank - 1 and rank > 1 else axis


@CUMSUM.emits("torch-xla")
def _cumsum_to_torch(node, t):
    """``torch.cumsum`` (a reversed sum is flipped around it by ``passes/legalize/decompose.py``)."""
    x, dtype = t.ref(node.inputs[0]), node.output.type.dtype
    cast = "" if dtype == node.inputs[0].type.dtype else f", dtype=torch.{dtype}"
    t.assign(node, f"torch.cumsum({x}, dim={forward(node)}{cast})")
