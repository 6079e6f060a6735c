"""The op tables (``portx/op_tables/<target>.toml``): per target, each IR op's TPU status with evidence.

A table is named by its target (``"keras-jax"``, ``"torch-xla"``); ``tpu`` and ``torch_xla``, the
names the CLI has always taken, are aliases. Each row's status is ``native``, ``unsupported`` or
``rewrite:<rule>[,<rule>...]`` naming registered rules: node rules (``resize.py``, ``pool.py``, ``fft.py``)
for op rows, graph passes (``dtypes.py``) for dtype rows. Both targets' pipelines apply their own
table (``passes/pipeline.py``); ``table_problems`` checks a table against the registry and rules.
This module imports the rules; no rule imports it.

Example:
    >>> table = load_table("keras-jax")      # or load_table("tpu")
    >>> table["op"]["conv"]["status"]
    'native'
"""
from __future__ import annotations

import tomllib
from importlib import resources

from ...ir import REGISTRY
from . import fft, pool, resize  # noqa: F401  (registers the node rules)
from .dtypes import DTYPE_RULES
from .rewriter import NODE_RULES

__all__ = ["TABLES", "ALIASES", "RULES", "table_name", "load_table", "table_problems", "rules_of", "status_of",
           "status_counts"]

#: target -> its op table in portx/op_tables/ ("torch-xla": PyTorch on TPU via PyTorch/XLA or torchax)
TABLES = {"keras-jax": "keras_jax.toml", "torch-xla": "torch_xla.toml"}
#: the older table names, still accepted (``portx ops --target tpu``)
ALIASES = {"tpu": "keras-jax", "torch_xla": "torch-xla", "keras_jax": "keras-jax"}
#: rules that op tables may name (``status = "rewrite:<name>"``): graph passes for dtype rows,
#: node rules for op rows
RULES = DTYPE_RULES | NODE_RULES
#: row kinds: IR ops, dtypes (graph-wide passes), and source patterns the frontend refuses
_KINDS = ("op", "dtype", "pattern")


def table_name(name: str) -> str:
    """The target a table name or alias stands for: ``table_name("tpu") == "keras-jax"``."""
    target = ALIASES.get(name, name)
    if target not in TABLES:
        raise KeyError(f"unknown op table {name!r}; known: {sorted(TABLES)} (aliases {sorted(ALIASES)})")
    return target


def load_table(name: str) -> dict:
    """Parse one table (a target name or alias): ``{"op": {...}, "dtype": {...}, "pattern": {...}}``."""
    text = resources.files("portx").joinpath("op_tables", TABLES[table_name(name)]).read_text(encoding="utf-8")
    return tomllib.loads(text)


def rules_of(status: str) -> list:
    """The rule names in an op-table status: ``"rewrite:a,b"`` -> ``["a", "b"]`` (else ``[]``)."""
    if not status.startswith("rewrite:"):
        return []
    return [name.strip() for name in status.split(":", 1)[1].split(",") if name.strip()]


def table_problems(name: str) -> list:
    """Everything wrong with a table: missing or unknown ops, bad statuses, unregistered or misrouted rules.

    Example: ``table_problems("torch-xla") == []``; a row without evidence gives ``["row op.conv needs ..."]``.
    """
    table = load_table(name)
    problems = [f"op {op} has no row" for op in REGISTRY if op not in table.get("op", {})]
    problems += [f"unknown row kind [{kind}]" for kind in table if kind not in _KINDS]
    for kind in _KINDS:
        for key, row in table.get(kind, {}).items():
            problems += _row_problems(f"{kind}.{key}", row)
            if kind == "op" and key not in REGISTRY:
                problems.append(f"row op.{key} names no registered op")
            problems += _misrouted(kind, key, row)
    return problems


def _misrouted(kind, key, row) -> list:
    """An op row must name node rules for that op; a dtype row, graph passes."""
    problems = []
    for rule in rules_of(row.get("status", "")):
        if kind == "op" and rule in RULES:
            ops = [op.name for op in getattr(RULES[rule], "ops", ())]
            if key not in ops:
                problems.append(f"row op.{key}: rule {rule} rewrites {ops or 'whole graphs'}, not {key}")
        elif kind == "dtype" and rule in NODE_RULES:
            problems.append(f"row dtype.{key}: rule {rule} rewrites single nodes, not whole graphs")
    return problems


def _row_problems(where, row) -> list:
    status = row.get("status", "")
    problems = []
    if status.startswith("rewrite:"):
        names = rules_of(status)
        problems += [f"row {where} names unregistered rule rewrite:{n}" for n in names if n not in RULES]
        if not names:
            problems.append(f"row {where} has bad status {status!r}")
    elif status not in ("native", "unsupported"):
        problems.append(f"row {where} has bad status {status!r}")
    if not row.get("why") or not row.get("source"):
        problems.append(f"row {where} needs 'why' and 'source'")
    return problems


def status_counts(name: str) -> dict:
    """How many op rows are native, rewrite or unsupported: ``{"native": 80, "rewrite": 3, ...}``."""
    counts = {"native": 0, "rewrite": 0, "unsupported": 0}
    for row in load_table(name).get("op", {}).values():
        counts[row["status"].split(":", 1)[0]] += 1
    return counts


def status_of(name: str, op: str) -> dict:
    """The row for ``op`` (``{"status": "unsupported", ...}`` when the table has none)."""
    return load_table(name).get("op", {}).get(op, {"status": "unsupported", "why": "no row", "source": ""})
