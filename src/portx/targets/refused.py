"""A written model that fails to build on a free dim: the framework's own exception, turned into the
``FreeDimRefused`` that names the node (Note [build-time refusal]).

Example:
    >>> with refused_build(graph, emitter.names, "out/model.py"):
    ...     model = module.build_model()       # FreeDimRefused("node lin (qr): ...", {"batch"}, "node lin (qr)")
"""
from __future__ import annotations

import contextlib
import re
import traceback
from pathlib import Path

from ..errors import PortxError
from ..ir import FreeDimRefused, SymDim

__all__ = ["refused_build"]

#: a statement binding variables (``a, b = ...``; keyword arguments are written without spaces around ``=``)
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*(?:,\s*[A-Za-z_]\w*)*) = ")


@contextlib.contextmanager
def refused_build(graph, names, code_path):
    """Re-raise the framework's exception raised while ``code_path`` builds (a graph with free dims only) as
    FreeDimRefused naming the node whose statement raised it; portx's own errors pass unchanged."""
    try:
        yield
    except (FreeDimRefused, PortxError):
        raise
    except Exception as exc:  # noqa: BLE001 - Keras' ValueError/TypeError, jax's InconclusiveDimensionOperation
        free = set(graph.meta.get("free", {}).get("dims", {}))
        if not free:
            raise
        node = _node_at(graph, names, code_path, exc)
        where = node.where() if node is not None else "a node"
        symbols = _symbols(graph, node) & free if node is not None else set()
        message = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines()[0][:200]
        raise FreeDimRefused(f"{type(exc).__name__}: {message}", symbols or free, where) from exc


def _node_at(graph, names, code_path, exc):
    """The node whose statements in ``code_path`` raised ``exc`` (by the variables they bind), or None."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == Path(code_path)]
    if not frames:
        return None
    lines, value_of = Path(code_path).read_text(encoding="utf-8").splitlines(), {var: v for v, var in names.items()}
    at = frames[-1].lineno - 1
    start = next((i for i in range(at, -1, -1) if _ASSIGNED.match(lines[i])), at)  # a wrapped statement's first line
    for line in lines[start:]:  # the statement, or the first binding of a node's outputs after its temporaries
        match = _ASSIGNED.match(line)
        values = {value_of[n] for n in re.split(r",\s*", match.group(1)) if n in value_of} if match else ()
        if values:
            return next((node for node in graph.nodes if values & set(node.outputs)), None)
    return None


def _symbols(graph, node) -> set:
    """The free symbols on ``node``'s input and output shapes."""
    return {s for value in (*node.inputs, *node.outputs) for d in graph.free_shape(value)
            if isinstance(d, SymDim) for s in d.symbols}

# Note [build-time refusal]: an emit rule writes a Keras call for a free dim (``None`` in the Input) that Keras
# itself cannot type: ``ops.linalg.qr`` wants its last two dims known, ``lu_factor`` compares them with ``<``.
# Those fail only when ``build_model()`` runs the written statements on symbolic tensors (a ValueError or
# TypeError from Keras, an InconclusiveDimensionOperation from jax's symbolic shapes). Each node's statements
# end by binding its outputs, so the failing line names the node (a rule's temporaries come first); convert
# pins that node's free symbols with a warning naming it (session/dims/find.py ``repin``), as for a
# FreeDimRefused raised by the emit rule itself, and emits again. A graph without free dims that fails to build
# is a bug, and its exception passes unchanged.
