"""``op_table``: one row per IR op with its names, emit targets and TPU status (``portx ops``, ``portx.op_table``).

Example:
    >>> op_table("tpu")[0]["status"]
"""
from __future__ import annotations

from pathlib import Path

from .ir import REGISTRY
from .passes.legalize import load_table
from .targets import find_target

__all__ = ["op_table"]


def op_table(target=None) -> list:
    """One row per IR op: name, family, torch names, emit targets, and the TPU status from ``target``'s op table.

    ``target`` is a target name or alias (``"tpu"``, ``"torch_xla"``). Example: ``op_table("tpu")[0]["status"]``.
    """

    found = find_target(target, "--target") if target else None
    table = load_table(found.table) if target else {}
    rows = [{"op": op.name, "family": op.family, "torch": sorted(op.import_names.get("torch", [])),
             "onnx": sorted(op.import_names.get("onnx", [])),
             "emits": sorted(op.emit_rules), **table.get("op", {}).get(op.name, {}),
             **({"rule": _where(op.emit_rules.get(found.name))} if found else {})}
            for op in sorted(REGISTRY.values(), key=lambda o: (o.family, o.name))]
    rows += [{"op": f"{kind} {k}", "family": kind, "torch": [], "onnx": [], "emits": [], **v}
             for kind in ("dtype", "pattern") for k, v in table.get(kind, {}).items()]
    return rows


def _where(fn) -> str:
    """``src/portx/ops/conv/to_keras.py:42``: where function ``fn`` is defined (relative to the package's parent)."""
    if fn is None:
        return ""
    import inspect as pyinspect

    fn = pyinspect.unwrap(fn)
    path = Path(pyinspect.getsourcefile(fn)).resolve()
    root = Path(__file__).resolve().parents[1]
    shown = path.relative_to(root.parent) if path.is_relative_to(root.parent) else path
    return f"{shown}:{fn.__code__.co_firstlineno}"
