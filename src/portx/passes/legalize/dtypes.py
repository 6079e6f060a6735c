"""Graph-wide dtype rules for TPUs: float64 -> float32 (complex128 -> complex64) and int64 -> int32.

XLA:TPU has no float64 hardware and only partial int64 support; JAX makes no 64-bit values unless
x64 is enabled. The op tables name these passes in their ``dtype.float64`` / ``dtype.int64``
rows, and each target's pipeline runs the ones its table names (``passes/pipeline.py``). Both
rebuild the graph with ``retype`` and warn (``PortxWarning``) with the scopes they changed.

Example (before / after ``cast_float64_to_float32``)::

    %y: float64[2] = mul(%x, %w) {}        %y: float32[2] = mul(%x, %w) {}
    param %w: float64[2]              ->   param %w: float32[2]
"""
from __future__ import annotations

import warnings

import numpy as np

from ...errors import PortxWarning
from ...ir import Graph, Node, Value, infer_outputs, param_value
from ...ops.elementwise import CAST
from .float8 import compute_float8_in_float32

__all__ = ["PortxWarning", "DTYPE_RULES", "retype", "cast_float64_to_float32", "narrow_int64_to_int32"]


def retype(graph: Graph, dtype_map: dict, param_arrays: dict, cast_outputs: bool = False) -> Graph:
    """Rebuild ``graph`` with new dtypes for inputs/params, re-inferring every node's outputs.

    ``dtype_map`` maps old dtype names to new ones, also applied to ``dtype`` attributes;
    ``param_arrays`` gives the (already converted) arrays for changed parameters. With
    ``cast_outputs``, a node whose shape rule still yields an old dtype (argmax is always int64)
    is followed by a cast, so values that meet downstream (a concat of ids and an argmax) agree.
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
        outs, casts = [], []
        for old, t in zip(node.outputs, types):
            new = old if t == old.type else Value(old.name, t)
            remap[old] = new
            outs.append(new)
            if cast_outputs and t.dtype in dtype_map and node.op is not CAST:
                narrowed = Value(f"{old.name}.narrowed", t.with_dtype(dtype_map[t.dtype]))
                casts.append(Node(CAST, (new,), (narrowed,), {"dtype": dtype_map[t.dtype]}, node.scope))
                remap[old] = narrowed
        nodes.append(node.replace(inputs=ins, outputs=tuple(outs), attrs=attrs))
        nodes.extend(casts)
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


#: the 64-bit integer types ``narrow_int64_to_int32`` narrows, and to what
_NARROW = {"int64": "int32", "uint64": "uint32"}


def narrow_int64_to_int32(graph: Graph) -> Graph:
    """int64 inputs, int64 parameters whose values fit in int32, and casts to int64 become int32 (uint64:
    uint32, which JAX without x64 makes of it anyway).

    A warning names the scopes that computed in int64 (index arithmetic, casts, ids).
    """
    changed = {}
    for name, array in graph.params.items():
        if str(array.dtype) in _NARROW:
            info = np.iinfo(_NARROW[str(array.dtype)])
            if array.size and (array.min() < info.min or array.max() > info.max):
                warnings.warn(PortxWarning(f"parameter {name}: {array.dtype} values do not fit {info.dtype}; kept"))
                continue
            changed[name] = array.astype(info.dtype)
    int_inputs = [v.name for v in graph.inputs if v.type.dtype in _NARROW]
    int64_values = [o.name for n in graph.nodes for o in n.outputs if o.type.dtype in _NARROW]
    if not changed and not int_inputs and not int64_values:
        return graph
    if int_inputs:
        warnings.warn(PortxWarning(f"inputs {', '.join(int_inputs)}: int64 -> int32 (JAX without x64 and "
                                   "TPUs use 32-bit integers; ids must be below 2**31)"))
    after = retype(graph, _NARROW, changed, cast_outputs=True)
    narrowed = {o.name for n in graph.nodes for o in n.outputs if o.type.dtype in _NARROW}
    if changed or narrowed:
        warnings.warn(PortxWarning(f"int64 -> int32 (TPUs emulate 64-bit integers) at: "
                                   f"{', '.join(_scopes_using(graph, set(changed) | narrowed)) or 'inputs'}"))
    return after


#: graph passes the op tables' dtype rows may name (``status = "rewrite:<name>"``)
DTYPE_RULES = {fn.__name__: fn for fn in (cast_float64_to_float32, narrow_int64_to_int32, compute_float8_in_float32)}
