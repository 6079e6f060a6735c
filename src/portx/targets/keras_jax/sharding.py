"""``layout_map(mesh)`` for the emitted model.py: the graph's sharding plan (passes/sharding.py) as Keras variable
paths, read like keras-hub's ``get_layout_map``.

Note [variable splits]: the plan speaks of IR parameters in the source's layout (a torch linear weight is
(out, in)); a Keras variable holds the same numbers permuted (Dense's kernel is (in, out), a channels-last
kernel HWIO). Each variable of a layer is matched to one of its node's parameters by shape up to a permutation,
and by value where two permutations fit (a square kernel); the split dims follow the permutation. A variable
that matches none (a folded or reshaped weight, a seed state) is split like any other weight of its shape
(the plan's ``fsdp``/``small`` rule).

Example:
    >>> splits = variable_splits(graph, model, emitted["layer_of"], emitter.weights)
    >>> splits["blocks_0_qkv/kernel"]
    ((32, 96), (1, 0), 'colwise')
"""
from __future__ import annotations

import itertools
import math
import re

import numpy as np

from ..codegen import literal

__all__ = ["variable_splits", "layout_map_source", "split_patterns", "resolve"]


def _node_params(graph, layer_of) -> dict:
    """Layer name -> names of the parameters its node reads."""
    producers, params = graph.producers(), {}
    for value, layer in layer_of.items():
        node = producers.get(value)
        if node is not None:
            names = [v.name for v in node.inputs if graph.is_param(v)]
            params.setdefault(layer, []).extend(n for n in names if n not in params.get(layer, ()))
    return params


def _permutation(array, shape, candidates, graph, by_shape=True):
    """``(param name, perm)`` with ``array == param.transpose(perm)`` (Note [variable splits]), else None.
    ``by_shape``: one permutation that fits the shape is enough (the layer's own node's parameters)."""
    fits = []
    if len(shape) > 6:  # 7! permutations per candidate and up: split by shape alone
        return None
    for name in candidates:
        param_shape = tuple(graph.param_values[name].type.shape)
        if len(param_shape) != len(shape):
            continue
        fits += [(name, perm) for perm in itertools.permutations(range(len(shape)))
                 if tuple(param_shape[p] for p in perm) == tuple(shape)]
    if (len(fits) > 1 or not by_shape) and array is not None:
        fits = [(n, p) for n, p in fits if n in graph.params and
                _same(np.transpose(graph.params[n], p), array)] or fits[:0]
    return fits[0] if len(fits) == 1 else None


def _same(a, b, probes=64) -> bool:
    """True when arrays ``a`` and ``b`` of one shape agree: all of them when small, else at ``probes`` fixed
    positions, so that a memory-mapped weight has a few pages read, not all (Note [lazy weights])."""
    a, b = np.asarray(a), np.asarray(b)
    if a.size <= 4096:
        return np.array_equal(a, b)
    rng = np.random.default_rng(0)
    at = tuple(rng.integers(0, n, probes) for n in a.shape)
    return np.array_equal(a[at], b[at])


def variable_splits(graph, model, layer_of, weights) -> dict:
    """``{variable path: (shape, dims to split in order of preference, role)}`` for every variable of ``model``
    (built without values: ``abstract_model``), from the roles ``passes/sharding.py`` recorded in
    ``graph.meta["sharding"]``; ``weights`` ({layer name: arrays in ``layer.weights`` order}, the emitter's) are
    the values that tell two same-shaped candidates apart.

    Example: ``variable_splits(graph, model, layer_of, weights)["lm_head/kernel"] == ((32, 101), (1, 0), "vocab")``.
    """
    recorded = graph.meta.get("sharding", {})
    roles, small_bytes = recorded.get("roles", {}), recorded.get("small_bytes", 64)
    of_layer, of_size = _node_params(graph, layer_of), {}
    roles = {name: role for name, role in roles.items() if name in graph.param_values}  # passes drop some
    for name in roles:  # a layer no node names (a Constant holding a parameter): the parameters of its size
        of_size.setdefault(int(np.prod(graph.param_values[name].type.shape)), []).append(name)
    splits = {}
    for layer in model.layers:
        given = weights.get(layer.name) or []
        for k, variable in enumerate(layer.weights):
            shape = tuple(int(d) for d in variable.shape)
            own = [n for n in of_layer.get(layer.name, ()) if n in roles]
            candidates = own or of_size.get(math.prod(shape), [])
            value = np.asarray(given[k]) if candidates and k < len(given) else None
            found = _permutation(value, shape, candidates, graph,
                                 by_shape=bool(own))
            if found is None:
                role, dims = _shape_rule(shape, np.dtype(variable.dtype).itemsize, small_bytes)
            else:
                name, perm = found
                role, source_dims = roles[name]
                dims = tuple(perm.index(d) for d in source_dims)
            splits[variable.path] = (shape, dims, role)
    return splits


def _shape_rule(shape, itemsize, small_bytes):
    """The plan's rule for a weight no node claims: small vectors whole, the rest along their largest dim."""
    if len(shape) <= 1 and int(np.prod(shape)) * itemsize < small_bytes:
        return "small", ()
    return "fsdp", tuple(sorted(range(len(shape)), key=lambda d: -shape[d]))


def split_patterns(splits, blocks=()) -> dict:
    """``splits`` with the rows of repeated blocks as one regular expression each (``layers_\\d+_mlp_up_proj/kernel``,
    as keras-hub's layout maps write them): the variables of blocks ``stem0``, ``stem1``, ... (``blocks``:
    graph.meta["blocks"]) that share a shape, dims and role. Kept only when every variable then resolves, as
    ``keras.distribution.LayoutMap`` looks it up (``resolve``), to the row it had; else ``splits`` as they are."""
    stems = sorted({b["stem"] for b in blocks or () if b.get("stem")}, key=len, reverse=True)
    keys, groups, counts = {}, {}, {}
    for path, value in splits.items():
        stem = next((s for s in stems if re.match(re.escape(s) + r"\d+[_/]", path)), None)
        keys[path] = path if stem is None else \
            re.escape(stem) + r"\d+" + re.escape(re.sub(r"^\d+", "", path[len(stem):]))
        groups.setdefault(keys[path], set()).add(value)
        counts[keys[path]] = counts.get(keys[path], 0) + 1
    table = {}
    for path, value in splits.items():
        key = keys[path]
        whole = key != path and len(groups[key]) == 1 and counts[key] > 1
        table[key if whole else path] = value
    same = all(resolve(table, path)[:2] == value[:2] for path, value in splits.items())
    return table if same else dict(splits)


def resolve(table, path):
    """The row of ``table`` that ``keras.distribution.LayoutMap`` gives the variable ``path``: the row of that key,
    else the one key that matches it whole (``re.fullmatch``, as Keras 3 does; None where none or several do)."""
    if path in table:
        return table[path]
    found = [key for key in table if re.fullmatch(key, path)]
    return table[found[0]] if len(found) == 1 else (None, None)


def layout_map_source(splits, blocks=()) -> str:
    """The ``SHARDING`` table and ``layout_map(mesh)`` function model.py ends with; the rows of repeated blocks as
    patterns (``split_patterns``).

    Example: ``layout_map_source({"fc/kernel": ((4, 8), (1, 0), "colwise")})`` starts with ``"\\n\\n# ..."``.
    """
    rows = "\n".join(_row(f"r{literal(path)}".replace("\\\\", "\\") if "\\" in path else literal(path),
                          f"({literal(shape)}, {literal(dims)}),  # {role}")
                     for path, (shape, dims, role) in split_patterns(splits, blocks).items())
    return _LAYOUT_MAP.replace("ROWS", rows, 1)


def _row(key, value) -> str:
    """One ``SHARDING`` entry, its value on a line of its own where one line would pass 100 columns."""
    line = f"    {key}: {value}"
    return line if len(line) <= 100 else f"    {key}:\n        {value}"


_LAYOUT_MAP = '''

# Variable path: (shape, dims to split along "model" in order of preference), read from the
# converted graph: attention q/k/v and MLP up/gate split their output features (colwise),
# attention output and MLP down their input features (rowwise), embeddings and the LM head the
# vocabulary; other weights their largest dim (FSDP style); small vectors stay whole.
SHARDING = {
ROWS
}


def layout_map(mesh):
    """A keras.distribution.LayoutMap for ``mesh``, a DeviceMesh with axes ("batch", "model").

    Each weight splits along "model" on the first of its dims that the axis size divides; a weight
    with no such dim stays whole on every device (a warning names it). Use it as
    ``load_model(distribution=keras.distribution.ModelParallel(layout_map=layout_map(mesh),
    batch_dim_name="batch"))``.
    """
    import warnings

    size = dict(zip(mesh.axis_names, mesh.shape)).get("model", 1)
    layout = keras.distribution.LayoutMap(mesh)
    for path, (shape, dims) in SHARDING.items():
        dim = next((d for d in dims if shape[d] % size == 0), None)
        if dims and dim is None:
            warnings.warn(f"layout_map: {path} {shape} has no dim that {size} divides; kept whole")
        layout[path] = tuple("model" if d == dim else None for d in range(len(shape)))
    return layout
'''
