"""float8 on the keras-jax target: every op but the casts computes on float32 copies of its float8 operands.

Keras 3 takes float8 (``float8_e4m3fn``, ``float8_e5m2``) only in ``ops.cast`` and ``ops.view``: its dtype
promotion refuses a float8 operand anywhere else ("There is no implicit conversions from float8 dtypes to
others"), even ``ops.concatenate`` of two float8 tensors. This pass (the ``dtype.float8_*`` rows of
``op_tables/keras_jax.toml``) widens the float8 operands of every other node to float32 (exact: float32 holds
every float8 value), runs the node there, and casts its float8 results back, so each result is rounded to float8
once, as XLA does for float8 arithmetic. A float8 parameter is stored as float32 and cast to float8 where it is
read, since Keras keeps no float8 weights. torch-xla keeps float8 as it is (torch.float8_* tensors).

Example (before / after ``compute_float8_in_float32``)::

    %y: float8_e5m2[5x8] = concat(%a, %w)       %a.f32 = cast(%a) {dtype: float32}
    param %w: float8_e5m2[3x8]             ->    %w.float8 = cast(%w) {dtype: float8_e5m2}; param %w: float32[3x8]
                                                 %w.float8.f32 = cast(%w.float8) {dtype: float32}
                                                 %y.f32: float32[5x8] = concat(%a.f32, %w.float8.f32)
                                                 %y: float8_e5m2[5x8] = cast(%y.f32) {dtype: float8_e5m2}
"""
from __future__ import annotations

from ...ir import Graph, Node, TensorType, Value, fresh_name, infer_outputs, param_value
from ...ir.types import FLOAT8
from ...ops.elementwise import BITCAST, CAST

__all__ = ["compute_float8_in_float32"]

#: ops Keras runs on float8 tensors as they are
_FLOAT8_OPS = (CAST, BITCAST)


def _is_float8(value) -> bool:
    return value is not None and value.type.dtype in FLOAT8


def compute_float8_in_float32(graph: Graph) -> Graph:
    """float8 operands of every node but casts and bitcasts read as float32, float8 results cast back; float8
    parameters stored as float32. Returns ``graph`` itself when it holds no float8 there."""
    params8 = {n for n, v in graph.param_values.items() if _is_float8(v)}
    wide_nodes = [n for n in graph.nodes if n.op not in _FLOAT8_OPS and any(map(_is_float8, n.inputs + n.outputs))]
    if not params8 and not wide_nodes:
        return graph
    taken = {v.name for n in graph.nodes for v in n.outputs} | set(graph.params) | {v.name for v in graph.inputs}
    params, values, remap, nodes, widened, copies = dict(graph.params), dict(graph.param_values), {}, [], {}, {}

    def new_value(base, ttype, node_output=False):
        name = fresh_name(taken, base)
        taken.add(name)
        copies[name] = (base.rsplit(".", 1)[0], node_output)  # a copy's free dims (Note [free dims]) are its original's
        return Value(name, ttype)

    for name in sorted(params8):
        old = graph.param_values[name]
        params[name] = graph.params[name].astype("float32")
        values[name] = param_value(name, params[name])
        remap[old] = new_value(f"{name}.float8", old.type)
        nodes.append(Node(CAST, (values[name],), (remap[old],), {"dtype": old.type.dtype}, name))

    def as_float32(value, scope):
        if value not in widened:
            widened[value] = new_value(f"{value.name}.f32", value.type.with_dtype("float32"))
            nodes.append(Node(CAST, (value,), (widened[value],), {"dtype": "float32"}, scope))
        return widened[value]

    wide = set(map(id, wide_nodes))
    for node in graph.nodes:
        ins = tuple(None if v is None else remap.get(v, v) for v in node.inputs)
        if id(node) not in wide:
            nodes.append(node.replace(inputs=ins))
            continue
        ins = tuple(as_float32(v, node.scope) if _is_float8(v) else v for v in ins)
        attrs = {k: "float32" if k == "dtype" and a in FLOAT8 else a for k, a in node.attrs.items()}
        types = infer_outputs(node.op, [None if v is None else v.type for v in ins], attrs)
        outs, casts = [], []
        for old, ttype in zip(node.outputs, types):
            if _is_float8(old) and ttype.dtype == "float32":
                out = new_value(f"{old.name}.f32", TensorType(ttype.shape, "float32"), True)
                casts.append(Node(CAST, (out,), (old,), {"dtype": old.type.dtype}, node.scope))
                outs.append(out)
            else:
                outs.append(old)
        nodes.append(node.replace(inputs=ins, outputs=tuple(outs), attrs=attrs))
        nodes.extend(casts)
    return graph.replace(outputs=tuple(remap.get(v, v) for v in graph.outputs), nodes=tuple(nodes), params=params,
                         param_values=values, meta=_free_dims_copied(graph.meta, copies))


def _free_dims_copied(meta, copies) -> dict:
    """``meta`` with each new value's free dims those of the value it copies, and a widened node's free attributes
    (keyed by its first output) those of the node it was."""
    free = meta.get("free")
    if not free:
        return meta
    tables = {key: dict(free.get(key, {})) for key in ("values", "attrs")}
    for new, (old, node_output) in copies.items():
        for key, table in tables.items():
            if old in table and (key == "values" or node_output):
                table[new] = table[old]
    return {**meta, "free": {**free, **tables}}
