"""The source lowered as ``portx convert`` emitted it, free dims included, for ``portx verify`` and
``portx.testing`` (verification/recheck.py takes ``lower_for`` as an argument: verification never imports the
session).

Example:
    >>> graph = lower_for(load("model.pt2"), TARGETS["keras-jax"], dynamic=("x:1",))
"""
from __future__ import annotations

import warnings

from ...errors import BadInput
from ...passes.layout import graph_axis
from ...passes.pipeline import inference_skip
from ...verification.recheck import prepared
from .find import find_free
from .plan import parse_dynamic, plan_dims

__all__ = ["lower_for", "requested_dims"]


def lower_for(src, target, skip=None, raw=None, io_layout="source", free=True, dynamic=(), static_batch=None):
    """The source's IR after ``target``'s passes (minus ``skip``) and ``--io-layout``: what convert emitted,
    with the free dims it keeps by default and the ``dynamic`` ones (``--dynamic`` specs, as convert was given
    them; ``free=False``: static). ``static_batch``: the batch stays pinned (``src`` is at that batch already:
    recorded.py ``at_batch``).

    ``skip`` None: the default pass set. ``raw`` reuses an already lowered, not yet rewritten graph (passes are
    pure functions).
    Example: ``make_inputs(lower_for(load("model.pt2"), TARGETS["keras-jax"]), seed=0)``.
    """
    skip = inference_skip() if skip is None else skip
    def prepare(graph):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convert already reported these warnings
            return prepared(graph, target, skip, io_layout)

    graph = prepare(src.lower() if raw is None else raw)
    if not free:
        return graph
    rows = plan_dims(src, graph, dynamic, static_batch)  # a malformed --dynamic spec is the user's to fix: BadInput
    try:  # the dims convert keeps free (Note [free dims])
        return find_free(src, graph, lambda s: prepare(s.lower()), rows, [])[1]
    except BadInput:  # a --dynamic axis the model fixes: convert refused it; checked at its sizes here
        return graph


def requested_dims(src, graph, dynamic) -> list:
    """The free dims of ``graph`` (``lower_for``'s with these ``dynamic`` specs) that carry the axes the specs name
    (a declared dim's own symbol where the source declares it, ``batch`` for axis 0 of every input): what ``portx
    verify --dynamic`` checks at the sizes convert checks them at (verification/dynamic.py ``sample_sizes``).

    BadInput names a spec whose axis is not free there: the source fixes it (convert refused it), or OUT was
    written without it (its model.py is the static variant). Example: ``requested_dims(src, graph, ("x:1",))``
    -> ``["x_1"]``.
    """
    names, free = [v.name for v in graph.inputs], graph.meta.get("free", {}).get("dims", {})
    carrying = {(i, axis): symbol for symbol, dim in free.items() for i, axis in dim["sites"]}
    symbols = []
    for row in parse_dynamic(dynamic, names):
        (i, axis), = row["sites"]
        symbol = carrying.get((i, graph_axis(graph, i, axis)))  # free sites are the emitted layout's axes
        if symbol is None:
            raise BadInput(f"--dynamic {names[i]}:{axis}: that axis is not free in the model converted from "
                           f"{src.label}: the source fixes it, or OUT was converted without it",
                           hint=f"drop --dynamic {names[i]}:{axis}, or convert again with it")
        symbols += [symbol] if symbol not in symbols else []
    return symbols
