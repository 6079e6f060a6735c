"""TPU legality: each target's op table, applied as IR rewrites before any emitter runs.

``tables.py`` loads and checks the op tables (``portx/op_tables/<target>.toml``); ``driver.py``
applies a table's node rules (``legalize``) and the decompositions both targets share (``decompose``,
``decompose.py``); the table rules are in ``resize.py``, ``pool.py`` and ``fft.py`` on the
``Rewriter`` of ``rewriter.py``, and the graph-wide dtype passes in ``dtypes.py`` and ``float8.py``.

Example:
    >>> from portx.passes.legalize import legalize, table_problems
    >>> graph = legalize(graph, "torch-xla")     # uneven adaptive pools and resizes rewritten
    >>> table_problems("keras-jax")
    []
"""
from __future__ import annotations

from .driver import decompose, legalize, legalize_for_keras_jax, legalize_for_torch_xla
from .dtypes import DTYPE_RULES, PortxWarning, cast_float64_to_float32, narrow_int64_to_int32, retype
from .float8 import compute_float8_in_float32
from .rewriter import NODE_RULES, Rewriter, contract_axes, node_rule
from .tables import (ALIASES, RULES, TABLES, load_table, rules_of, status_counts, status_of, table_name,
                     table_problems)

__all__ = ["decompose", "legalize", "legalize_for_keras_jax", "legalize_for_torch_xla", "PortxWarning", "DTYPE_RULES",
           "retype",
           "cast_float64_to_float32", "narrow_int64_to_int32", "compute_float8_in_float32", "NODE_RULES", "Rewriter",
           "contract_axes", "node_rule", "TABLES", "ALIASES", "RULES", "table_name", "load_table", "rules_of", "status_of",
           "status_counts", "table_problems"]
