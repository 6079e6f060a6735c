"""The op tables (``portx/op_tables/<target>.toml``): per target, each IR op's TPU status with evidence.

Example:
    >>> table = load_table("tpu")
    >>> table["op"]["conv"]["status"]
    'native'
"""
from __future__ import annotations

import tomllib
from importlib import resources

__all__ = ["TABLES", "load_table", "table_problems", "status_of"]

#: table name -> the portx target it describes
TABLES = {"tpu": "keras-jax"}


def load_table(name: str) -> dict:
    """Parse one table; ``{"op": {...}, "dtype": {...}}``."""
    if name not in TABLES:
        raise KeyError(f"unknown op table {name!r}; known: {sorted(TABLES)}")
    text = resources.files("portx").joinpath("op_tables", f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def table_problems(name: str) -> list:
    """Everything wrong with a table: missing or unknown ops, bad statuses, unregistered rules."""
    from .ir import REGISTRY
    from .passes.legalize import RULES

    table = load_table(name)
    rows = {**{("op", k): v for k, v in table.get("op", {}).items()},
            **{("dtype", k): v for k, v in table.get("dtype", {}).items()}}
    problems = [f"op {op} has no row" for op in REGISTRY if op not in table.get("op", {})]
    for (kind, key), row in rows.items():
        if kind == "op" and key not in REGISTRY:
            problems.append(f"row op.{key} names no registered op")
        status = row.get("status", "")
        if status.startswith("rewrite:") and status.split(":", 1)[1] not in RULES:
            problems.append(f"row {kind}.{key} names unregistered rule {status}")
        elif status not in ("native", "unsupported") and not status.startswith("rewrite:"):
            problems.append(f"row {kind}.{key} has bad status {status!r}")
        if not row.get("why") or not row.get("source"):
            problems.append(f"row {kind}.{key} needs 'why' and 'source'")
    return problems


def status_of(name: str, op: str) -> dict:
    """The row for ``op`` (``{"status": "unsupported", ...}`` when the table has none)."""
    return load_table(name).get("op", {}).get(op, {"status": "unsupported", "why": "no row", "source": ""})
