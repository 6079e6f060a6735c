"""The process's heap: freed memory handed back to the operating system (glibc; a no-op elsewhere).

glibc keeps freed heap pages resident, so a stage's peak stacks on the last one's unless they are trimmed
(``trim_heap``), and it serves allocations below its mmap threshold from those heaps (Note [fixed mmap
threshold] in verification/memory.py: ``fix_mmap_threshold``). Here, not in verification/, because the targets'
runners free what they compiled too (Note [probe outputs] in targets/keras_jax/runtime.py).

Example:
    >>> trim_heap()  # after dropping an XLA executable
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["trim_heap", "fix_mmap_threshold", "MMAP_THRESHOLD"]

#: allocations from this size on get their own mapping, returned to the OS when freed (Note [fixed mmap threshold])
MMAP_THRESHOLD = 1 << 20


def fix_mmap_threshold():
    """glibc's ``mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)`` (Note [fixed mmap threshold]); a no-op elsewhere."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD in malloc.h


def trim_heap():
    """glibc's ``malloc_trim(0)``: return free heap pages to the OS (a no-op elsewhere)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):  # musl and others have no malloc_trim
        libc.malloc_trim(0)


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
