"""TPU legality passes on dtypes: float64 -> float32, int64 -> int32 where values fit.

XLA:TPU has no float64 hardware and only partial int64 support; JAX makes no 64-bit values
unless x64 is enabled (see op_tables/tpu.toml, rows `float64` and `int64`). Each pass warns
with the scopes it changed.

Example (before / after)::

    %y: float64[2] = mul(%x, %w) {}        %y: float32[2] = mul(%x, %w) {}
    param %w: float64[2]              ->   param %w: float32[2]
"""
from __future__ import annotations

import warnings

import numpy as np

from ..ir import Graph, Value, infer_outputs, param_value

__all__ = ["PortxWarning", "RULES", "retype", "cast_float64_to_float32", "narrow_int64_to_int32"]


class PortxWarning(UserWarning):
    """A conversion changed something the user should know about (collected into report.json)."""


def retype(graph: Graph, dtype_map: dict, param_arrays: dict) -> Graph:
    """Rebuild ``graph`` with new dtypes for inputs/params, re-inferring every node's outputs.

    ``dtype_map`` maps old dtype names to new ones, also applied to ``dtype`` attributes;
    ``param_arrays`` gives the (already converted) arrays for changed parameters.
    """
    remap = {}
    inputs = []
    for v in graph.inputs:
        new = Value(v.name, v.type.with_dtype(dtype_map.get(v.type.dtype, v.type.dtype)))
        remap[v] = new
        inputs.append(new)
    params, values = dict(graph.params), dict(graph.param_values)
    for name, array in param_arrays.items():
        params[name] = array
        values[name] = remap[graph.param_values[name]] = param_value(name, array)
    nodes = []
    for node in graph.nodes:
        ins = tuple(None if v is None else remap.get(v, v) for v in node.inputs)
        attrs = {k: dtype_map.get(a, a) if k == "dtype" and isinstance(a, str) else a for k, a in node.attrs.items()}
        types = infer_outputs(node.op, [v.type if v is not None else None for v in ins], attrs)
        outs = []
        for old, t in zip(node.outputs, types):
            new = old if t == old.type else Value(old.name, t)
            remap[old] = new
            outs.append(new)
        nodes.append(node.replace(inputs=ins, outputs=tuple(outs), attrs=attrs))
    return graph.replace(inputs=tuple(inputs), outputs=tuple(remap.get(v, v) for v in graph.outputs),
                         nodes=tuple(nodes), params=params, param_values=values)


def _scopes_using(graph, names):
    return sorted({n.scope or n.outputs[0].name for n in graph.nodes
                   if any(v is not None and v.name in names for v in n.inputs + n.outputs)})[:8]


def cast_float64_to_float32(graph: Graph) -> Graph:
    """Every float64 input, parameter and cast becomes float32 (complex128 -> complex64)."""
    wide = {"float64": "float32", "complex128": "complex64"}
    changed = {n: a.astype(wide[str(a.dtype)]) for n, a in graph.params.items() if str(a.dtype) in wide}
    touched = [v.name for v in graph.inputs if v.type.dtype in wide] + list(changed)
    touched += [o.name for n in graph.nodes for o in n.outputs if o.type.dtype in wide]
    if not touched:
        return graph
    warnings.warn(PortxWarning(f"float64 -> float32 (TPUs have no float64) at: "
                               f"{', '.join(_scopes_using(graph, set(touched))) or 'inputs'}"))
    return retype(graph, wide, changed)


def narrow_int64_to_int32(graph: Graph) -> Graph:
    """int64 parameters whose values fit in int32, and int64 inputs, become int32."""
    info = np.iinfo(np.int32)
    changed = {}
    for name, array in graph.params.items():
        if array.dtype == np.int64:
            if array.size and (array.min() < info.min or array.max() > info.max):
                warnings.warn(PortxWarning(f"parameter {name}: int64 values do not fit int32; kept as int64"))
                continue
            changed[name] = array.astype(np.int32)
    int_inputs = [v.name for v in graph.inputs if v.type.dtype == "int64"]
    if not changed and not int_inputs:
        return graph
    if int_inputs:
        warnings.warn(PortxWarning(f"inputs {', '.join(int_inputs)}: int64 -> int32 (JAX without x64 and "
                                   "TPUs use 32-bit integers; ids must be below 2**31)"))
    return retype(graph, {"int64": "int32"}, changed)


#: rewrite rules that op_tables may name (``status = "rewrite:<name>"``)
RULES = {fn.__name__: fn for fn in (cast_float64_to_float32, narrow_int64_to_int32)}
