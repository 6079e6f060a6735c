"""torch-xla helpers for emitter tests: ``check_torch_xla_op`` and ``emit_and_load``.

``check_torch_xla_op(fn_or_module, *inputs)`` is ``harness.check_torch_op`` pinned to the torch-xla
target (the family tables in tests/ops run both targets themselves; Note [both targets] in harness.py).
"""
import functools
import os

import portx  # noqa: F401  (registers ops)
from harness import ALLOWED_IMPORTS, check_torch_op, imported_modules
from portx.targets.codegen import import_by_path
from portx.targets.torch_xla.emitter import emit_torch

__all__ = ["ALLOWED_IMPORTS", "check_torch_xla_op", "emit_and_load", "imported_modules"]

check_torch_xla_op = functools.partial(check_torch_op, target="torch-xla")


def emit_and_load(graph, folder):
    """Emit ``graph`` into ``folder`` and return (the user's load_model() module, model.py text)."""
    files = emit_torch(graph, folder)
    code = files["code"].read_text()
    return import_by_path(os.path.join(folder, "model.py")).load_model(), code
