"""Blocks cut out of a loaded module whose ``forward`` is straight-line Python (the torch-xla target's model.py):
a repeated block is its submodule at the source path, or the statements of ``forward`` that compute it (Note [cut
blocks] in keras_jax/cuts.py).

Example:
    >>> cut = forward_cutter(model, graph, emitted["var_of"], emitted["block_inputs"])
    >>> needed, run = cut(segment)
    >>> outputs = run([source_values[v.name] for v in needed])
"""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from collections import Counter

from .first_blocks import without_first
from .codegen import flatten_outputs
from ..weights.tensors import array_of, tensor_of

__all__ = ["forward_cutter"]

# Note [forward slices]: a block is the run of ``forward``'s statements from the first that binds one of its values
# to the last that binds one of its outputs (its flat code, or the lines that call its class, ``self.transformer[0]
# (...)``, with those hoisted before the call): they are compiled into a function of the block's inputs and the
# graph's inputs, run on the model itself (``self``), so nothing is built or copied. A slice that reads another
# variable (a value of the glue between its statements) is not cut. Where ``forward`` calls the blocks in a loop
# (a variable bound once per block), the block is its module, written as a class at the source path or at its
# place in the container (Note [structured code]): it is called with the IR values the emitter wrote its
# ``forward``'s arguments for, in that order (``block_inputs``, Note [forward's arguments] in
# torch_xla/block_args.py): the block's inputs, the hidden state first, and the graph inputs it reads for sizes
# (``idx.shape[0]``). Without that record, its inputs then the graph inputs.


def forward_cutter(model, graph, var_of, block_inputs=None):
    """``cut(segment) -> (needed IR values, run) | why`` for ``model`` (a torch module) emitted from ``graph``;
    ``block_inputs``: {block key: the IR values its class's ``forward`` takes, in turn} (emit's dict)."""
    forward = getattr(type(model), "forward", None)
    if forward is None:
        return lambda seg: "the model has no forward to cut"
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(forward))).body[0].body
    except (OSError, TypeError, SyntaxError, IndexError):
        return lambda seg: "the model's forward has no source to cut"

    blocks = without_first(graph).meta.get("blocks") or []  # Note [an unnumbered first block]
    rebound = {name for name, count in Counter(var_of.values()).items() if count > 1}

    def cut(seg):
        sliced = _slice_cut(model, forward, body, seg, graph, var_of, rebound)
        module = _submodule(model, seg.key, blocks) if isinstance(sliced, str) else None
        given = (block_inputs or {}).get(seg.key)
        return _module_cut(module, seg, graph, given) if module is not None else sliced

    return cut


def _submodule(model, key, blocks):
    """The block's module where model.py writes it as a class of its own (a container of flat code's layers is not):
    at its source path, or the block's place in its container (Keras' ``block_2`` is ``self.block[1]``)."""
    module = _at(model, key)
    if module is None:
        block = next((b for b in blocks if b["key"] == key), None)
        siblings = sorted(b["index"] for b in blocks if block is not None and b["parent"] == block["parent"])
        container = _at(model, block["parent"]) if block is not None else None
        if hasattr(container, "__len__") and len(container) == len(siblings):
            module = container[siblings.index(block["index"])]
    if module is None:
        return None
    return module if getattr(type(module).forward, "__name__", "") not in ("", "_forward_unimplemented") else None


def _at(model, path):
    try:
        return model.get_submodule(path) if path else None
    except AttributeError:
        return None


def _module_cut(module, seg, graph, given=None):
    """The block's own module, called on ``given`` (the values the emitter wrote its forward for, Note [forward
    slices]), or on its inputs and the graph inputs its forward reads for sizes."""
    params = list(inspect.signature(module.forward).parameters)
    needed = list(given) if given else \
        list(seg.inputs) + [v for v in graph.inputs if v not in seg.inputs][:len(params) - len(seg.inputs)]
    if len(needed) != len(params):
        return f"its module takes {len(params)} arguments, the block reads {len(seg.inputs)} values"
    return needed, lambda feed: _call(module, feed)


def _slice_cut(model, forward, body, seg, graph, var_of, rebound):
    """The statements of ``forward`` that compute the block (Note [forward slices]), as a function."""
    mine = {var_of[v] for n in seg.nodes for v in n.outputs if v in var_of}
    outs = [var_of.get(v) for v in seg.outputs]
    if None in outs or not mine:
        return "its values have no variables in forward"
    if rebound & {*outs, *(var_of.get(v) for v in seg.inputs)}:
        return "a variable of its inputs or outputs is bound more than once (a loop over the blocks)"
    binds = [_bound(stmt) for stmt in body]
    lines = [i for i, names in enumerate(binds) if names & mine]
    last = [i for i, names in enumerate(binds) if names & set(outs)]
    if not lines or not last:
        return "its values are bound inside a compound statement of forward"
    stmts = body[lines[0]:last[-1] + 1]
    if any(isinstance(s, (ast.For, ast.While, ast.If, ast.With, ast.Return)) for s in stmts):
        return "its statements are not straight-line code"
    if any(v not in var_of for v in seg.inputs):
        return "an input of the block has no variable in forward"
    given = list(seg.inputs) + [v for v in graph.inputs if v not in seg.inputs and v in var_of]
    args = [var_of[v] for v in given]
    reads = _free(stmts) - set(args) - {"self"} - set(forward.__globals__) - set(dir(builtins))
    if reads:
        return f"its statements read {', '.join(sorted(reads))}, made outside the block"
    returned = ast.Return(ast.Tuple([ast.Name(o, ast.Load()) for o in outs], ast.Load()))
    signature = ast.arguments([], [ast.arg("self")] + [ast.arg(a) for a in args], None, [], [], None, [])
    fn = ast.FunctionDef("block", signature, stmts + [returned], [], None)
    space = dict(forward.__globals__)
    code = compile(ast.fix_missing_locations(ast.Module([fn], [])), "<block>", "exec")
    exec(code, space)  # noqa: S102  # trusted: lines of the model.py portx just emitted (Note [untrusted names])
    return given, lambda feed: _call(lambda *xs: space["block"](model, *xs), feed)


def _bound(stmt) -> set:
    """The names a statement binds."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def _free(stmts) -> set:
    """The names ``stmts`` read before binding them."""
    bound, free = set(), set()
    for stmt in stmts:
        value = getattr(stmt, "value", stmt)
        free |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
        bound |= _bound(stmt)
    return free


def _call(fn, feed) -> list:
    """``fn`` on NumPy ``feed`` (copies: the emitted code adds in place) under no_grad, its outputs as NumPy."""
    import torch

    with torch.no_grad():
        return [array_of(t) for t in flatten_outputs(fn(*[tensor_of(a) for a in feed]))]
