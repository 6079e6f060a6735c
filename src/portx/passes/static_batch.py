"""A static program's graph at another batch, by its ops' own shape rules (Note [static batch]).

``rebatch(graph, sites, s0, s1)`` gives the graph a program exported at batch ``s0`` would have at ``s1``: the
inputs' batch axes at ``s1``, every value's type inferred again, and the batch literals of shape attributes (the
leading entry of a reshape's or expand's ``shape``, a slice's ``end`` on axis 0) rewritten where the rule needs
it. ``diff_free`` (passes/free_dims.py) then reads the free batch off the two graphs as it does for two
lowerings; a node whose rule refuses both raises NotFree naming it. With a symbolic torch.export's ``hints`` it
builds any free dim's second graph from the one lowering (Note [symbols read directly] in
frontends/torch/symbols.py).

Example:
    >>> g3 = rebatch(g2, [[0, 0]], 2, 3)            # x: float32[2x3x8x8] -> float32[3x3x8x8], flatten (3, 192)
    >>> found = diff_free(g2, g3, "batch", 2, 3)
"""
from __future__ import annotations

import itertools

import numpy as np

from ..ir import Value, infer_outputs
from .free_dims import NotFree, band_of, row_kind

__all__ = ["rebatch", "grown"]

#: attributes that hold a shape, whose leading entry is the batch where the op's input carries one
_SHAPE_ATTRS = ("shape",)


def rebatch(graph, sites, s0, s1, hints=None):
    """``graph`` with the batch axes ``sites`` ([[input, axis], ...]) at ``s1`` instead of ``s0`` and every
    type inferred again; NotFree names the first node no rewrite makes fit. ``hints`` (a symbolic export's, from
    its one lowering: Note [symbols read directly]) says each value's shape at ``s1`` and which literals follow
    the size; with them, ``sites`` may be any free dim, not only a batch."""
    new, params, param_values = {}, dict(graph.params), dict(graph.param_values)
    for i, value in enumerate(graph.inputs):
        shape = list(value.type.shape)
        for index, axis in sites:
            shape[axis] = s1 if index == i else shape[axis]
        new[value] = Value(value.name, value.type.with_shape(shape))
    nodes = []
    for node in graph.nodes:
        ins = [None if v is None else new.get(v, v) for v in node.inputs]
        if hints:
            ins = [_regrown(graph, v, hints, new, params, param_values) for v in ins]
        attrs, types, ins = _fitted(graph, node, ins, s0, s1, hints)
        for old, value in zip(node.inputs, ins):
            if not hints and old is not None and graph.is_param(old) and value is not old:
                new[old], param_values[old.name] = value, value  # a constant the size of the batch
                params[old.name] = np.repeat(graph.params[old.name][:1], s1, axis=0)
        outs = [Value(v.name, t) for v, t in zip(node.outputs, types)]
        new.update(zip(node.outputs, outs))
        nodes.append(node.replace(inputs=tuple(ins), outputs=tuple(outs), attrs=attrs))
    return graph.replace(inputs=tuple(new[v] for v in graph.inputs),
                         outputs=tuple(new.get(v, v) for v in graph.outputs), nodes=tuple(nodes), params=params, param_values=param_values)


def _fitted(graph, node, ins, s0, s1, hints=None):
    """(attrs, output types, inputs) of ``node`` on inputs ``ins``: its batch literals rewritten, else as they
    are, else with its stored inputs of ``s0`` equal rows grown to ``s1`` rows (a folded mask of ones). With
    ``hints``, the literals torch computed from the size are the rewrites, and torch's shape picks among them."""
    grown = [v if v is None or not _grows(graph, v, s0) else Value(v.name, v.type.with_shape((s1, *v.type.shape[1:])))
             for v in ins]
    candidates = _by_literals(node.attrs, hints["literals"]) if hints else [_rewritten(node.attrs, s0, s1), node.attrs]
    want = [hints["shapes"].get(v.name) for v in node.outputs] if hints else []
    problem = None
    for inputs in ((ins,) if hints else (ins, grown)):
        for attrs in candidates:
            try:
                types = infer_outputs(node.op, [None if v is None else v.type for v in inputs],
                                      node.op.normalize_attrs(attrs, node.where()))
            except (ValueError, TypeError, IndexError) as exc:
                problem = exc
                continue
            if all(w is None or sorted(w) == sorted(t.shape) for w, t in zip(want, types)):  # the layout passes
                return attrs, types, inputs  # may have permuted the axes torch recorded
            problem = f"gives {types[0].shape} where torch's shapes say {want[0]}"
    raise NotFree(f"{node.where()} does not fit {'the other size' if hints else f'batch {s1}'} ({problem})")


#: attributes that never hold a size (an axis, a permutation, a dtype), left as they are by ``_by_literals``
_NOT_SIZES = ("axis", "axes", "perm", "dim", "dims", "dtype")


def _by_literals(attrs, literals, limit=64) -> list:
    """``attrs`` as they are, then with each subset of its ints that follow the size rewritten, the fewest first,
    and of as many, those that take only sizes torch computed from the symbol (``literals``: {at s0: {at s1}})
    before those that take a multiple of one (a merged batch and sequence axis, ``b * s``, where only one of them
    moves: Note [sizes before multiples]); at most ``limit`` candidates."""
    moves = [(a0, a1) for a0, images in literals.items() for a1 in images if a0 > 1]

    def images(x):
        exact = sorted(literals.get(x, ()))
        return [(n, True) for n in exact] + \
            [(n, False) for n in sorted({x // a0 * a1 for a0, a1 in moves if x % a0 == 0 and x != a0} - set(exact))]

    spots = [(key, path, images(int(x))) for key, value in attrs.items() if key not in _NOT_SIZES
             for path, x in _ints(value) if images(int(x))]
    out = [attrs]
    for count in range(1, len(spots) + 1):
        for exact in (True, False):
            for chosen in itertools.combinations(spots, count):
                for picks in itertools.product(*(spot[2] for spot in chosen)):
                    if all(is_exact for _, is_exact in picks) != exact:
                        continue
                    changed = dict(attrs)
                    for (key, path, _), (n, _) in zip(chosen, picks):
                        changed[key] = _replaced(changed[key], path, n)
                    out.append(changed)
                    if len(out) >= limit:
                        return out
    return out


# Note [sizes before multiples]: a node the layout passes made (``unmerge_rows``' ``_rows`` values, Note [unmerged
# rows] in layout/rows.py) has no shape of torch's to pick its literals by, so the first candidate its rule accepts
# is taken. The ViT's attention output, unmerged to (L, B, E) = ``reshape(shape=(16, 2, 16))`` where its block runs
# in torch's own sequence-first order (Note [ties go to orders at hand] in layout/sink.py), fits the batch of 3 both
# as (16, 3, 16), the batch literal torch computed, and as (24, 2, 16), the sequence taken for a multiple of the
# batch (16 = 8 * 2). The latter came first (its int comes first), the residual add after it did not fit, and the
# conversion lowered the export a second time (session/dims/find.py ``_second_size``). Of as many rewrites, those
# of sizes torch computed come first; a multiple is tried only where none of them fits.


def _ints(value, path=()):
    """(path, int) for each int of ``value``, also inside nested tuples and lists (a pad's (before, after) pairs)."""
    if isinstance(value, (tuple, list)):
        return [found for i, x in enumerate(value) for found in _ints(x, path + (i,))]
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return [(path, value)]
    return []


def _replaced(value, path, n):
    """``value`` with the int at ``path`` (``_ints``) replaced by ``n``."""
    if not path:
        return n
    return type(value)(_replaced(x, path[1:], n) if k == path[0] else x for k, x in enumerate(value))


def _regrown(graph, value, hints, new, params, param_values):
    """A stored input at the shape torch gives it at the other size, its rows extended (``grown``), or as it is."""
    if value is None or not graph.is_param(value):
        return value
    if value.name in hints["fixed"]:
        raise NotFree(f"stored constant {value.name} is computed from the size; its value there is not known")
    want, array = hints["shapes"].get(value.name), graph.params[value.name]
    if want is None and value.type.rank == 0 and array.dtype.kind in "iu" and int(array) in hints["literals"] \
            and value.name not in hints.get("numbers", ()):  # BART's offset 2 at batch 2: Note [literal or size]
        sizes = hints["literals"][int(array)]  # a size a rule stored (an index's stride): the size it equals
        if len(sizes) != 1:
            raise NotFree(f"stored size {value.name} = {int(array)} could be any of {sorted(sizes)} at the other size")
        want, array = (), np.asarray(next(iter(sizes)), array.dtype)
    if want is None or tuple(want) == tuple(value.type.shape) and array is graph.params[value.name] or value in new:
        return new.get(value, value)
    params[value.name] = array = grown(array, want, value.name) if want else array
    new[value] = param_values[value.name] = Value(value.name, value.type.with_shape(array.shape))
    return new[value]


def grown(array, shape, name=""):
    """``array`` at ``shape`` (same rank), along each axis that changes its one row repeated, its arange
    continued (``row_kind``) or its band kept (``band_of``); NotFree for any other constant."""
    axes = [a for a in range(array.ndim) if array.shape[a] != shape[a]] if len(shape) == array.ndim else None
    if axes is None:
        raise NotFree(f"stored constant {name} changes rank with the size")
    band = band_of(array, axes) if any(row_kind(array, a) is None for a in axes) else None
    if band is not None:
        a, b, lo, hi = band
        offsets = np.arange(shape[b])[None, :] - np.arange(shape[a])[:, None]
        grid = (offsets >= (-np.inf if lo is None else lo)) & (offsets <= (np.inf if hi is None else hi))
        view = [1] * array.ndim
        view[a], view[b] = shape[a], shape[b]
        return np.ascontiguousarray(np.broadcast_to(grid.reshape(view), shape))
    for axis in axes:
        kind = row_kind(array, axis)
        if kind is None:
            raise NotFree(f"stored constant {name} of shape {array.shape} varies along axis {axis}, which follows "
                          "a free dim, neither as one row repeated nor as an arange")
        index = np.arange(shape[axis]).reshape([shape[axis] if k == axis else 1 for k in range(array.ndim)])
        array = (kind[0] + kind[1] * index).astype(array.dtype)
    return np.ascontiguousarray(array)


def _grows(graph, value, s0) -> bool:
    """A stored input of ``s0`` equal rows (a mask of ones folded at the export's batch)."""
    if not graph.is_param(value) or not value.type.rank or value.type.shape[0] != s0 or s0 < 2:
        return False
    array = graph.params[value.name]
    return bool(np.array_equal(array, np.broadcast_to(array[:1], array.shape)))


def _rewritten(attrs, s0, s1) -> dict:
    """``attrs`` with the batch literal ``s0`` as ``s1``: the leading entry of a shape, a slice's end on axis 0."""
    out = dict(attrs)
    for name in _SHAPE_ATTRS:
        shape = attrs.get(name)
        if isinstance(shape, (tuple, list)) and shape and shape[0] == s0:
            out[name] = type(shape)((s1, *shape[1:]))
    if attrs.get("axis") == 0 and attrs.get("end") == s0:
        out["end"] = s1
    return out

# Note [static batch]: a .pt2 exported without Dims, or an ONNX/TF file with fixed dims, lowers at one batch
# only; its source cannot be lowered again at a second batch for ``diff_free``. Its ops can: each op's shape
# rule gives the types at another batch, and the only literals that spell the batch are shape attributes (a
# reshape to ``(2, 192)``, an expand to ``(2, 1, 5)``, ``x[:2]``). ``rebatch`` rewrites those where the node's
# input moved, and keeps the rest (a conv's stride of 2 is never touched). What this cannot see (rows that
# mix: a reshape across rows, batch statistics, a sort over axis 0) the verification sees: the batch's
# reference at another size is the source itself run on row chunks of its export size (Note [rows independent]
# in verification/chunks.py), so a model whose rows mix fails there and its batch stays pinned, with a warning.
