"""Atomic output folders: build in a temporary sibling, move into place only at the end.

Example:
    >>> with staged_output("out/", force=False) as tmp:
    ...     (tmp / "model.py").write_text(code)
    # out/ now exists; on any exception or Ctrl-C it does not, and tmp is gone.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from .errors import BadInput

__all__ = ["staged_output", "check_output"]


def check_output(out, force: bool) -> Path:
    """Fail early (exit 2) when OUT exists without ``force`` or its parent is not writable."""
    out = Path(out)
    if out.exists() and not force:
        raise BadInput(f"{out}: already exists", hint="pass --force to replace it, or choose another -o")
    if out.exists() and not out.is_dir():
        raise BadInput(f"{out}: exists and is not a folder", hint="choose another -o")
    parent = out.resolve().parent
    existing = next((p for p in (parent, *parent.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        raise BadInput(f"{existing}: is not a folder, so {out} cannot be created", hint="choose another -o")
    if not os.access(existing, os.W_OK):
        raise BadInput(f"{existing}: is not writable", hint="choose an -o in a folder you can write")
    if not parent.is_dir():
        return out
    if not os.access(parent, os.W_OK):
        raise BadInput(f"{parent}: is not writable", hint="choose an -o in a folder you can write")
    return out


@contextlib.contextmanager
def staged_output(out, force: bool):
    """Yield a temporary folder beside ``out``; rename it to ``out`` when the block succeeds."""
    out = check_output(out, force)
    parent = out.resolve().parent
    created = [p for p in (parent, *parent.parents) if not p.exists()]
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.portx-", dir=parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in created:  # innermost first: only the folders this run made, if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
