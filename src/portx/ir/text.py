"""Text form of the IR, for messages, golden files and test fixtures.

Example:
    >>> print(format_graph(g))
    graph model(%x: float32[1x4]) {
      param %fc.weight: float32[2x4]
      %y: float32[1x2] = linear(%x, %fc.weight, _) {}  # fc
      return %y
    }
"""
from __future__ import annotations

import ast
import re

import numpy as np

from .graph import Graph, Node, param_value
from .opdef import lookup
from .types import TensorType, Value

__all__ = ["format_graph", "format_node", "parse_graph", "window"]


def _type_text(t: TensorType) -> str:
    return str(t)


def _attr_text(value) -> str:
    """``repr`` that ``ast.literal_eval`` reads back, infinities included (written as 1e999)."""
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "1e999" if value > 0 else "-1e999"
    if isinstance(value, tuple):
        inner = ", ".join(_attr_text(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_attr_text(v) for v in value) + "]"
    return repr(value)


def format_node(node: Node) -> str:
    """One line: ``%y: float32[1x2] = relu(%x) {}  # scope``."""
    outs = ", ".join(f"%{v.name}: {_type_text(v.type)}" for v in node.outputs)
    ins = ", ".join("_" if v is None else f"%{v.name}" for v in node.inputs)
    attrs = "{" + ", ".join(f"{k}={_attr_text(v)}" for k, v in sorted(node.attrs.items())) + "}"
    scope = f"  # {node.scope}" if node.scope else ""
    return f"{outs} = {node.op.name}({ins}) {attrs}{scope}"


def format_graph(graph: Graph) -> str:
    """The whole graph as text (parameters as declarations, not data)."""
    ins = ", ".join(f"%{v.name}: {_type_text(v.type)}" for v in graph.inputs)
    lines = [f"graph {graph.name}({ins}) {{"]
    lines += [f"  param %{v.name}: {_type_text(v.type)}" for v in graph.param_values.values()]
    lines += ["  " + format_node(n) for n in graph.nodes]
    lines.append("  return " + ", ".join(f"%{v.name}" for v in graph.outputs))
    lines.append("}")
    return "\n".join(lines)


def window(graph: Graph, node: Node, radius: int = 1) -> str:
    """Three lines of text IR around ``node``, for error messages."""
    index = graph.nodes.index(node)
    chosen = graph.nodes[max(0, index - radius): index + radius + 1]
    return "\n".join(("> " if n is node else "  ") + format_node(n) for n in chosen)


_TYPE = re.compile(r"^(\w+)\[([^\]]*)\]$")
_DECL = re.compile(r"%([^\s:,()]+):\s*([^\s,]+)")
_NODE = re.compile(r"^(?P<outs>.*?)\s=\s(?P<op>\w+)\((?P<ins>[^)]*)\)\s*(?P<attrs>\{.*\})?\s*(#\s*(?P<scope>.*))?$")


def _parse_type(text: str) -> TensorType:
    m = _TYPE.match(text)
    if not m:
        raise ValueError(f"bad type {text!r}; expected like float32[1x3]")
    dims = m.group(2)
    shape = () if dims in ("", "scalar") else tuple(int(d) if d.lstrip("-").isdigit() else d
                                                   for d in dims.split("x"))
    return TensorType(shape, m.group(1))


def _parse_attrs(text: str) -> dict:
    if not text or text.strip() == "{}":
        return {}
    body = text.strip()[1:-1]
    call = ast.parse(f"f({body})", mode="eval").body
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


def parse_graph(text: str, params: dict | None = None) -> Graph:
    """Parse the text form. Parameters get ``params[name]`` or seeded random data."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    header = re.match(r"graph\s+([^\s(]+)\((.*)\)\s*\{$", lines[0])
    if not header:
        raise ValueError("text IR must start with 'graph NAME(%x: type, ...) {'")
    env, rng, params = {}, np.random.default_rng(0), dict(params or {})
    inputs = [Value(n, _parse_type(t)) for n, t in _DECL.findall(header.group(2))]
    env.update({v.name: v for v in inputs})
    param_arrays, param_vals, nodes, outputs = {}, {}, [], ()
    for line in lines[1:-1]:
        if line.startswith("param "):
            name, type_text = _DECL.findall(line)[0]
            t = _parse_type(type_text)
            array = params.get(name)
            if array is None:
                array = rng.standard_normal(t.shape).astype(t.dtype)
            param_arrays[name] = np.asarray(array)
            env[name] = param_vals[name] = param_value(name, param_arrays[name])
        elif line.startswith("return"):
            outputs = tuple(env[n.strip().lstrip("%")] for n in line[len("return"):].split(","))
        else:
            m = _NODE.match(line)
            if not m:
                raise ValueError(f"cannot parse IR line: {line!r}")
            outs = [Value(n, _parse_type(t)) for n, t in _DECL.findall(m.group("outs"))]
            ins = tuple(None if s.strip() == "_" else env[s.strip().lstrip("%")]
                        for s in m.group("ins").split(",") if s.strip())
            nodes.append(Node(lookup(m.group("op")), ins, tuple(outs), _parse_attrs(m.group("attrs")),
                              (m.group("scope") or "").strip()))
            env.update({v.name: v for v in outs})
    return Graph(tuple(inputs), outputs, tuple(nodes), param_arrays, param_vals, header.group(1))
