"""A PartitionSpec per parameter, read from the graph: Megatron-style tensor parallelism along one mesh axis.

Note [sharding roles]: the roles come from the ops, never from parameter names.

- ``colwise``: a linear whose output reaches an ``attention`` op's q, k or v through shape and elementwise ops
  (head split, rotary embedding), and the first linear(s) of an MLP pair; the weight (out, in) splits its output
  features (dim 0) and its bias with it. Each device computes its own heads / hidden units.
- ``rowwise``: the linear an attention output reaches through shape ops (the output projection), and the second
  linear of an MLP pair (one whose input comes from colwise linears through elementwise ops only: activation,
  gate product, dropout); the weight splits its input features (dim 1), one all-reduce follows. Its bias stays
  whole (it is added once, after the reduction).
- ``vocab``: embedding tables, and a linear that feeds a graph output with at least as many outputs as inputs
  (the LM head, tied or not): split along the vocabulary (dim 0).
- ``fsdp``: every other weight, split along its largest axis the mesh divides (FSDP style: gathered when used).
- ``small``: vectors (norm scales, biases) below ``small_bytes`` (Note [small weights]) and integer constants:
  replicated, since splitting them saves less memory than the gathers cost.

Each role lists the dims to split in order of preference: when the mesh's axis does not divide the first, the
next one is taken (any split computes the same numbers, XLA inserts the collectives), and a weight no dim of
which divides stays whole, named in one warning.

Note [closed pairs]: an MLP pair is *closed* when the first linears' outputs reach nothing but the second
linear, through pointwise ops that combine them only with each other (SwiGLU's ``silu(gate) * up``) or with
scalars. Only then can each device keep its slice of the hidden units between the two (torch's plan passes
local tensors there); the Keras layout needs no such guarantee, XLA places the collectives.

Note [small weights]: ``small_bytes`` defaults to 1/16384 of the model's weight bytes (at least 64 bytes): a
Llama-3-8B's norm scales (16 KB, under its 1 MB) stay whole, while a test model's vectors are a large share of
its few kilobytes and are split like everything else.

Example::

    >>> plan = plan_sharding(graph, {"batch": 2, "model": 4})
    >>> plan["blocks.0.qkv.weight"]
    Split(role='colwise', dims=(0, 1), spec=('model', None))
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

from ..errors import BadInput
from ..ir import Graph
from ..ops.attention import ATTENTION
from ..ops.embedding import EMBEDDING
from ..ops.linear import LINEAR, MATMUL
from .legalize import PortxWarning

__all__ = ["Split", "plan_sharding", "sharding_roles", "partition_spec", "small_threshold", "nbytes", "record_sharding",
           "parse_mesh", "MODEL_AXIS", "MESH_AXES"]

MODEL_AXIS = "model"
#: the mesh axes layout_map and the proof know: data parallel, then tensor parallel
MESH_AXES = ("batch", MODEL_AXIS)
#: the op traits (ops/traits.py) a trace walks through: they move or combine features without mixing them (Note
#: [sharding roles])
_SHAPE = ("rearranging",)
_POINTWISE = ("pointwise",)
_MAX_WALK = 64  # nodes a trace visits at most: a projection sits a few ops from its attention


@dataclass(frozen=True)
class Split:
    """How one parameter is split: its ``role``, the ``dims`` to split in order of preference, and the ``spec``
    (a mesh axis name or None per dim) for the mesh it was planned for. Example: ``Split("rowwise", (1, 0),
    (None, "model"))``."""

    role: str
    dims: tuple
    spec: tuple


def _linear_weight(graph, node):
    """``(weight value, colwise dims, rowwise dims)`` of a linear/matmul with a stored weight, else None."""
    if node.op is LINEAR and graph.is_param(node.inputs[1]):
        return node.inputs[1], (0, 1), (1, 0)
    if node.op is MATMUL and graph.is_param(node.inputs[1]) and node.inputs[1].type.rank >= 2:
        rank = node.inputs[1].type.rank  # x @ W: W is (..., in, out)
        return node.inputs[1], (rank - 1, rank - 2), (rank - 2, rank - 1)
    return None


def _walks(node, traits) -> bool:
    """True when a trace walks through ``node``: its op has one of ``traits``."""
    return any(node.op.has(trait) for trait in traits)


def _producers_of(graph, values, traits, producers):
    """The weighted linears whose outputs reach ``values`` backwards through ops with ``traits``."""
    found, seen = [], set()
    todo = [producers[v] for v in values if v in producers]
    while todo and len(seen) < _MAX_WALK:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if _linear_weight(graph, node):
            found.append(node)
        elif _walks(node, traits):
            todo.extend(producers[v] for v in node.inputs if v is not None and v in producers)
    return found


def _consumers_of(graph, values, traits, users):
    """The weighted linears that read ``values`` as their input, forwards through ops with ``traits``."""
    found, seen = [], set()
    todo = [(node, v) for v in values for node in users.get(v, ())]
    while todo and len(seen) < _MAX_WALK:
        node, via = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if _linear_weight(graph, node) and node.inputs[0] is via:
            found.append(node)
        elif _walks(node, traits):
            todo.extend((user, out) for out in node.outputs for user in users.get(out, ()))
    return found


def _reaches_output(graph, node, users) -> bool:
    """True when ``node``'s output reaches a graph output through shape and pointwise ops only."""
    outputs, seen, todo = set(graph.outputs), set(), list(node.outputs)
    while todo and len(seen) < _MAX_WALK:
        value = todo.pop()
        if value in outputs:
            return True
        seen.add(value)
        todo.extend(out for user in users.get(value, ()) if _walks(user, _SHAPE + _POINTWISE)
                    for out in user.outputs if out not in seen)
    return False


def _assign(roles, node, graph, role):
    """Give ``node``'s weight (and, colwise, its bias) ``role`` unless a rule already gave them one."""
    weight, col, row = _linear_weight(graph, node)
    if weight.name in roles:
        return
    roles[weight.name] = (role, col if role in ("colwise", "vocab") else row)
    bias = node.inputs[2] if node.op is LINEAR and len(node.inputs) > 2 else None
    if graph.is_param(bias) and bias.name not in roles:
        roles[bias.name] = ("colwise", (0,)) if role in ("colwise", "vocab") else ("small", ())


def _attention_roles(graph, roles, users, producers, near):
    """q/k/v projections colwise, the output projection rowwise; their weights go into ``near``."""
    for node in graph.nodes:
        if node.op is not ATTENTION:
            continue
        for linear in _producers_of(graph, node.inputs[:3], _SHAPE + _POINTWISE, producers):
            _assign(roles, linear, graph, "colwise")
            near.add(_linear_weight(graph, linear)[0].name)
        for linear in _consumers_of(graph, node.outputs, _SHAPE, users):
            _assign(roles, linear, graph, "rowwise")
            near.add(_linear_weight(graph, linear)[0].name)


def _mlp_roles(graph, roles, users, producers, closed):
    """Second linears whose input comes from unassigned linears through pointwise ops: a column/row pair.
    A pair whose first outputs reach nothing but the second linear goes into ``closed`` (Note [closed pairs])."""
    for node in graph.nodes:
        found = _linear_weight(graph, node)
        if not found or found[0].name in roles:
            continue
        firsts = _producers_of(graph, node.inputs[:1], _POINTWISE, producers)
        if firsts and all(_linear_weight(graph, f)[0].name not in roles for f in firsts):
            for first in firsts:
                _assign(roles, first, graph, "colwise")
            _assign(roles, node, graph, "rowwise")
            if _only_into(graph, firsts, node, users):
                closed.update(_linear_weight(graph, n)[0].name for n in (*firsts, node))


def _only_into(graph, firsts, second, users) -> bool:
    """True when the ``firsts``' outputs reach, through pointwise ops that combine them only with each other or
    with scalars, nothing but ``second``: no other op, no graph output (Note [closed pairs])."""
    reached = {out for first in firsts for out in first.outputs}
    todo, between = list(reached), []
    while todo and len(reached) <= _MAX_WALK:
        for user in users.get(todo.pop(), ()):
            if user is not second and user not in between:
                between.append(user)
                todo.extend(out for out in user.outputs if out not in reached)
                reached.update(user.outputs)
    if todo or any(value in reached for value in graph.outputs):
        return False
    return all(_walks(user, _POINTWISE) and all(v is None or v in reached or nbytes(v.type) <= 8
                                                    for v in user.inputs) for user in between)


def _vocab_roles(graph, roles, users):
    tables = set()
    for node in graph.nodes:
        if node.op is EMBEDDING and graph.is_param(node.inputs[0]):
            tables.add(node.inputs[0].name)
            roles.setdefault(node.inputs[0].name, ("vocab", (0, 1)))
    for node in graph.nodes:
        found = _linear_weight(graph, node)
        if not found or found[0].name in roles or not _reaches_output(graph, node, users):
            continue
        shape = found[0].type.shape
        if found[0].name in tables or shape[found[1][0]] >= shape[found[2][0]]:
            _assign(roles, node, graph, "vocab")


def sharding_roles(graph: Graph, small_bytes=None) -> dict:
    """``{param name: (role, dims in order of preference)}`` for every parameter (Note [sharding roles]).

    Example: ``sharding_roles(graph)["blocks.0.proj.weight"] == ("rowwise", (1, 0))``.
    """
    return _roles_and_groups(graph, small_bytes)[0]


def _roles_and_groups(graph, small_bytes):
    """(roles, the weights of attention projections, the weights of closed MLP pairs)."""
    users, producers = graph.users(), graph.producers()
    roles, near, closed = {}, set(), set()
    _attention_roles(graph, roles, users, producers, near)
    _mlp_roles(graph, roles, users, producers, closed)
    _vocab_roles(graph, roles, users)
    types = {name: value.type for name, value in graph.param_values.items()}
    small_bytes = small_threshold(graph) if small_bytes is None else small_bytes
    for name, type_ in types.items():
        if name in roles:
            continue
        if type_.rank <= 1 and nbytes(type_) < small_bytes:
            roles[name] = ("small", ())
        else:  # largest axis first; ties keep the leading one
            roles[name] = ("fsdp", tuple(sorted(range(type_.rank), key=lambda d: -int(type_.shape[d]))))
    return roles, near, closed


def record_sharding(graph: Graph) -> Graph:
    """Record the sharding roles in ``graph.meta["sharding"]`` for the targets' ``layout_map`` / ``tp_plan``.

    The graph's nodes are unchanged; before/after::

        meta {}   ->   meta {"sharding": {"roles": {"fc1.weight": ("colwise", (0, 1)), ...}, "small_bytes": 64,
                                  "attention": ["q.weight", ...], "closed": ["fc1.weight", "fc2.weight"]}}
    """
    small_bytes = small_threshold(graph)
    roles, near, closed = _roles_and_groups(graph, small_bytes)
    return graph.replace(meta={**graph.meta, "sharding": {"roles": roles, "small_bytes": small_bytes,
                                                          "attention": sorted(near), "closed": sorted(closed)}})


def small_threshold(graph) -> int:
    """Bytes below which a vector stays whole (Note [small weights]). Example: ``small_threshold(graph) >= 64``."""
    return max(64, sum(nbytes(v.type) for v in graph.param_values.values()) // 16384)


def nbytes(type_) -> int:
    """Bytes a TensorType's array holds, from its type alone. Example: ``nbytes(TensorType((2, 3), "float32"))``."""
    size = 1
    for d in type_.shape:
        size *= int(d)
    bits = re.search(r"\d+", type_.dtype)  # float32, bfloat16, float8_e4m3fn, complex64; bool: one byte
    return size * (int(bits.group()) // 8 if bits else 1)


def partition_spec(shape, dims, size, axis=MODEL_AXIS):
    """The spec splitting the first of ``dims`` that ``size`` divides along ``axis``; all None for no dims;
    None when no dim divides. Example: ``partition_spec((96, 32), (0, 1), 4) == ("model", None)``."""
    if not dims:
        return (None,) * len(shape)
    for dim in dims:
        if int(shape[dim]) % size == 0:
            return tuple(axis if d == dim else None for d in range(len(shape)))
    return None


def plan_sharding(graph: Graph, mesh: dict, *, axis=MODEL_AXIS, small_bytes=None) -> dict:
    """``{param name: Split}`` for a mesh ``{axis name: size}``; a weight the mesh's ``axis`` cannot split stays
    whole, and one PortxWarning names every such weight.

    Example: ``plan_sharding(graph, {"batch": 2, "model": 4})["tok.weight"].spec == ("model", None)``.
    """
    size = int(mesh.get(axis, 1))
    plan, whole = {}, []
    for name, (role, dims) in sharding_roles(graph, small_bytes).items():
        shape = graph.param_values[name].type.shape
        spec = partition_spec(shape, dims, size, axis)
        if spec is None:
            whole.append(f"{name} {tuple(shape)} ({role})")
            spec = (None,) * len(shape)
        plan[name] = Split(role, dims, spec)
    if whole:
        warnings.warn(PortxWarning(f"sharding: {len(whole)} weight(s) have no dim that {size} divides along "
                                   f"{axis!r} and stay whole on every device: {', '.join(whole[:8])}"
                                   + (f" and {len(whole) - 8} more" if len(whole) > 8 else "")))
    return plan


def parse_mesh(text, devices: int) -> dict:
    """``{"batch": 2, "model": 4}`` from ``"batch=2,model=4"``; BadInput for unknown axis names, sizes below 1 or
    more than ``devices`` devices in all. Example: ``parse_mesh("model=8", 8) == {"model": 8}``."""
    mesh = {}
    for part in str(text).split(","):
        name, _, size = part.partition("=")
        name = name.strip()
        if name not in MESH_AXES or name in mesh or not size.strip().isdigit() or int(size) < 1:
            raise BadInput(f"--mesh {text}: {part.strip()!r} is not AXIS=SIZE with a new axis from {MESH_AXES}",
                           hint="write it like --mesh batch=2,model=4")
        mesh[name] = int(size)
    total = 1
    for size in mesh.values():
        total *= size
    if total > devices:
        raise BadInput(f"--mesh {text}: {total} devices, but {devices} exist for the proof",
                       hint=f"choose axis sizes whose product is at most {devices}")
    return mesh
