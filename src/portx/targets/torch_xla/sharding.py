"""``tp_plan()`` for the emitted torch model.py: the graph's sharding roles (passes/sharding.py) as a plan for
``torch.distributed.tensor.parallel.parallelize_module``, read like Hugging Face's ``base_model_tp_plan``.

Note [torch plan]: the emitted ``forward()`` splits heads with static sizes (``q.reshape(2, 8, 4, 8)``), and
DTensor has no CPU rule for ``scaled_dot_product_attention``, so attention runs on whole tensors: the q/k/v
projections hold a slice of their weight each and gather their outputs (``ColwiseParallel(output_layouts=
Replicate())``), the output projection takes its whole input and slices it (``RowwiseParallel(input_layouts=
Replicate())``). A closed MLP pair (Note [closed pairs]) is split Megatron-style: up/gate keep their slice of
the hidden units, down reduces. Embeddings split the vocabulary (``RowwiseParallel`` on an ``nn.Embedding``),
the LM head gathers its logits. Only ``nn.Linear`` / ``nn.Embedding`` submodules holding the parameter as their
``weight`` are named; other weights stay whole (tensor parallelism does not split them), as does a weight the
source ties (an embedding and its LM head, Note [tied modules] in modules.py): ``parallelize_module`` would give
each module its own split copy, untied.

Example:
    >>> tp_plan_source(graph, model, emitted["module_of"]).splitlines()[2]
    'def tp_plan():'
"""
from __future__ import annotations

import fnmatch

from ..codegen import literal

__all__ = ["plan_patterns", "plan_rows", "resolve", "tp_plan_source"]

_ATTENTION = {"colwise": "ColwiseParallel(output_layouts=Replicate())",
              "rowwise": "RowwiseParallel(input_layouts=Replicate())"}
_CLOSED = {"colwise": "ColwiseParallel()", "rowwise": "RowwiseParallel()"}
_VOCAB = {"Embedding": "RowwiseParallel(input_layouts=Replicate())",
          "Linear": "ColwiseParallel(output_layouts=Replicate())"}


def _style(name, role, kind, recorded):
    if role == "vocab":
        return _VOCAB.get(kind), "vocabulary"
    if kind != "Linear" or role not in _ATTENTION:
        return None, ""
    if name in recorded.get("closed", ()):
        return _CLOSED[role], "MLP pair"
    if name in recorded.get("attention", ()):
        return _ATTENTION[role], "attention"
    return None, ""


def plan_rows(graph, model, module_of) -> list:
    """``[(submodule path, ParallelStyle source, why)]`` in graph order (Note [torch plan])."""
    recorded = graph.meta.get("sharding", {})
    roles, rows, done, producers = recorded.get("roles", {}), [], set(), graph.producers()
    tied = graph.meta.get("tied") or {}
    for value, path in module_of.items():
        node = producers.get(value)
        weights = [v for v in (node.inputs if node is not None else ()) if graph.is_param(v) and v.name in roles]
        if not weights or path in done or weights[0].name in tied:
            continue
        module = model.get_submodule(path)
        kind = type(module).__name__
        if getattr(module, "weight", None) is None or tuple(module.weight.shape) != tuple(weights[0].type.shape):
            continue
        style, why = _style(weights[0].name, roles[weights[0].name][0], kind, recorded)
        if style:
            rows.append((path, style, why))
            done.add(path)
    return rows


def plan_patterns(rows, paths) -> list:
    """``rows`` with the rows of repeated blocks as one row each: ``layers.*.self_attn.q_proj`` where every
    submodule the pattern names (``paths``: the model's submodule paths; ``parallelize_module`` matches each
    component with fnmatch) has a row, with the same style. A number the rows share stays (``blocks.*.mlp.0``: the
    first linear of each block's ``nn.Sequential``). Example: rows for ``layers.0.mlp.up_proj`` and
    ``layers.1.mlp.up_proj`` -> ``[("layers.*.mlp.up_proj", "ColwiseParallel()", "MLP pair")]``."""
    groups = {}
    for path, style, why in rows:
        key = tuple("*" if part.isdigit() else part for part in path.split("."))
        groups.setdefault((key, style, why), []).append(path.split("."))
    out, done = [], set()
    for path, style, why in rows:
        members = groups[(tuple("*" if part.isdigit() else part for part in path.split(".")), style, why)]
        pattern = ".".join(parts[0] if len(set(parts)) == 1 else "*" for parts in zip(*members))
        if len(members) > 1 and sorted(map(".".join, members)) == sorted(resolve(pattern, paths)):
            if pattern not in done:
                out.append((pattern, style, why))
                done.add(pattern)
        else:
            out.append((path, style, why))
    return out


def resolve(pattern, paths) -> list:
    """The paths among ``paths`` a plan key names, as ``parallelize_module`` reads it (fnmatch per component)."""
    parts = pattern.split(".")
    return [p for p in paths if len(p.split(".")) == len(parts)
            and all(fnmatch.fnmatchcase(a, b) for a, b in zip(p.split("."), parts))]


def tp_plan_source(graph, model, module_of) -> str:
    """The ``tp_plan()`` function model.py ends with (``return {}`` where no weight splits, a convolutional
    network); repeated blocks' rows as patterns (``plan_patterns``)."""
    paths = [name for name, _ in model.named_modules()]
    rows = "\n".join(f"        {literal(path)}: {style},  # {why}" for path, style, why in
                     plan_patterns(plan_rows(graph, model, module_of), paths))
    return _TP_PLAN.replace("ROWS", rows, 1) if rows else _NO_PLAN


_TP_PLAN = '''

def tp_plan():
    """{submodule: ParallelStyle} for torch.distributed.tensor.parallel.parallelize_module, read from the
    converted graph: attention and MLP projections column/row-wise, embeddings and LM head by vocabulary.

    Usage: ``parallelize_module(load_model(), init_device_mesh("cpu", (n,)), tp_plan())``. Attention's
    q/k/v gather their outputs (forward() splits heads with static sizes); an MLP pair keeps its slice
    of the hidden units between its two linears.
    """
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    return {
ROWS
    }
'''

_NO_PLAN = '''

def tp_plan():
    """{submodule: ParallelStyle} for torch.distributed.tensor.parallel.parallelize_module: empty, as no weight of
    this model splits (tensor parallelism splits attention and MLP projections, embeddings and LM heads)."""
    return {}
'''
