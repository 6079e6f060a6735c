"""torch-xla emit rules for sorting and running ops: the torch function of each (torch.sort, torch.topk,
torch.searchsorted, torch.cumprod, torch.cummax, ...); a reversed scan arrives flipped around a forward one
(``passes/legalize/decompose.py``).

Example:
    sort, sort_1 = torch.sort(x, dim=1, descending=True, stable=True)
"""
from __future__ import annotations

from .._util import forward, named_rule
from ..sort import SCANS, SEARCHSORTED, SORT, TOPK

__all__ = []


@SORT.emits("torch-xla")
def _sort_to_torch(node, t):
    a = node.attrs
    t.assign(node, f"torch.sort({t.ref(node.inputs[0])}, dim={a['axis']}, descending={a['descending']!r}, "
                   f"stable=True)")


@TOPK.emits("torch-xla")
def _topk_to_torch(node, t):
    a = node.attrs
    t.assign(node, f"torch.topk({t.ref(node.inputs[0])}, {a['k']}, dim={a['axis']}, largest={a['largest']!r})")


@SEARCHSORTED.emits("torch-xla")
def _searchsorted_to_torch(node, t):
    s, v = (t.ref(x) for x in node.inputs)
    int32 = node.attrs["dtype"] == "int32"
    out = f"torch.searchsorted({s}, {v}, right={node.attrs['right']!r}, out_int32={int32!r})"
    dtype = node.outputs[0].type.dtype
    t.assign(node, out if dtype in ("int32", "int64") else f"{out}.to({t.dtype(dtype)})")


#: running op -> (torch call, the attribute of its result that holds the values, or "")
_SCAN_CALLS = {"cumprod": ("torch.cumprod", ""), "cummax": ("torch.cummax", ".values"),
               "cummin": ("torch.cummin", ".values"), "logcumsumexp": ("torch.logcumsumexp", "")}


def _scan_rule(name):
    fn, field = _SCAN_CALLS[name]

    def emit(node, t):
        t.assign(node, f"{fn}({t.ref(node.inputs[0])}, {forward(node)}){field}")
    return named_rule(emit, name, "to_torch")


for _name, _op in SCANS.items():
    _op.emits("torch-xla")(_scan_rule(_name))
