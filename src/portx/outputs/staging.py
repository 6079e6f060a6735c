"""Staging folders and their markers: which portx process writes a folder, and the clean-up of those whose
process was killed (Note [output safety] in outputs/__init__.py).

Example:
    >>> clean_stale_staging(Path("models"))
    ['removed models/.out.portx-k2j4x9a1 (7.0 GB): the staging folder of portx process 4242, which ended ...']
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
from pathlib import Path

from ..version import __version__

__all__ = ["MARKER", "write_marker", "clean_stale_staging", "folder_size", "size_text"]

#: the file that says "portx wrote this folder" (tiny JSON with the portx version, process and host)
MARKER = ".portx-output"
#: a staging folder's name: ``.NAME.portx-`` and tempfile's 8 random characters (not a ``portx-old-`` backup)
_STAGING = re.compile(r"^\..*\.portx-(?!old-)[a-z0-9_]{8}$")


def write_marker(folder: Path):
    """Write MARKER into ``folder``: portx, its version, and the process and host that are writing it."""
    owner = {"written_by": "portx", "version": __version__, "pid": os.getpid(), "host": socket.gethostname()}
    (folder / MARKER).write_text(json.dumps(owner) + "\n", encoding="utf-8")


def _alive(pid) -> bool:
    """True unless process ``pid`` is certainly gone (a pid portx cannot read counts as alive)."""
    if not isinstance(pid, int) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def clean_stale_staging(parent: Path) -> list:
    """Remove the staging folders in ``parent`` whose portx process is gone (killed before it could clean up);
    one line per folder removed, for the report. Folders of live processes, other hosts and backups stay."""
    removed = []
    entries = list(parent.iterdir()) if parent.is_dir() else []
    for entry in entries:
        if not _STAGING.match(entry.name) or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            owner = json.loads((entry / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(owner, dict) or owner.get("written_by") != "portx" or \
                owner.get("host") != socket.gethostname() or _alive(owner.get("pid")):
            continue
        size = folder_size(entry)
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(f"removed {entry} ({size_text(size)}): the staging folder of portx process {owner['pid']}, "
                       f"which ended before it could clean up")
    return removed


def folder_size(folder: Path) -> int:
    """Bytes of the files under ``folder`` (links not followed; unreadable entries skipped)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def size_text(n: int) -> str:
    """``1.5 GB``, ``12.0 MB``, ``3.2 kB`` or ``17 bytes``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
