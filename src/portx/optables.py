"""The op tables (``portx/op_tables/<target>.toml``): per target, each IR op's TPU status with evidence.

Example:
    >>> table = load_table("tpu")
    >>> table["op"]["conv"]["status"]
    'native'
"""
from __future__ import annotations

import tomllib
from importlib import resources

__all__ = ["TABLES", "load_table", "table_problems", "status_of", "status_counts"]

#: table name -> the target it describes ("torch-xla": PyTorch on TPU via PyTorch/XLA or torchax;
#: portx has no torch-xla emitter yet, the table documents what one must rewrite)
TABLES = {"tpu": "keras-jax", "torch_xla": "torch-xla"}
#: row kinds: IR ops, dtypes (graph-wide passes), and source patterns the frontend refuses
_KINDS = ("op", "dtype", "pattern")


def load_table(name: str) -> dict:
    """Parse one table; ``{"op": {...}, "dtype": {...}}``."""
    if name not in TABLES:
        raise KeyError(f"unknown op table {name!r}; known: {sorted(TABLES)}")
    text = resources.files("portx").joinpath("op_tables", f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def table_problems(name: str) -> list:
    """Everything wrong with a table: missing or unknown ops, bad statuses, unregistered rules."""
    from .ir import REGISTRY
    from .passes.legalize import RULES, rules_of

    table = load_table(name)
    problems = [f"op {op} has no row" for op in REGISTRY if op not in table.get("op", {})]
    problems += [f"unknown row kind [{kind}]" for kind in table if kind not in _KINDS]
    for kind in _KINDS:
        for key, row in table.get(kind, {}).items():
            problems += _row_problems(f"{kind}.{key}", row, RULES, rules_of)
            if kind == "op" and key not in REGISTRY:
                problems.append(f"row op.{key} names no registered op")
            for rule in rules_of(row.get("status", "")) if kind == "op" else ():
                ops = [op.name for op in getattr(RULES.get(rule), "ops", ())]
                if rule in RULES and key not in ops:
                    problems.append(f"row op.{key}: rule {rule} rewrites {ops or 'whole graphs'}, not {key}")
    return problems


def _row_problems(where, row, rules, rules_of) -> list:
    status = row.get("status", "")
    problems = []
    if status.startswith("rewrite:"):
        names = rules_of(status)
        problems += [f"row {where} names unregistered rule rewrite:{n}" for n in names if n not in rules]
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
