"""Keeping a conversion's peak memory low: give back what a finished stage no longer needs.

A conversion holds the source, the emitted model and, stage after stage, the arrays and XLA executables
of verification runs it will not make again. After each heavy stage ``LeanStages`` collects cycles and
hands freed heap pages back to the operating system (glibc keeps them otherwise, so the next stage's
peak stacks on the last one's); after the last run of the emitted model's own forward (the ``verify``
stage) it also drops that forward's compiled executables, which the trace, gradient and TPU stages do not reuse
(they compile their own functions). Verification itself is unchanged: same runs, sizes and tolerances.

The cycle collections are for models of at least ``LEAN_BYTES`` of weights (``weigh`` tells the size once the
graph is known): a small model's peak is XLA's compilations, which a collection does not shrink (the sample: 2.4 s
of collections for no lower peak). For a large one ``weigh`` freezes what lives then (the frameworks' modules,
the source, the graph: all kept to the end anyway; not collected first, which took 0.3 s, so the lowering's few
cyclic leftovers wait for the unfreeze) so that the later collections scan only
what the stages made: 0.4 s each -> 0.03 s. Leaving the ``with`` block unfreezes them.

Example:
    >>> with LeanStages(progress=None, profile=True) as stages:
    ...     graph = stages.run("lower", src.lower)  # runs like progress.Stages, then releases
    ...     stages.weigh(graph.weight_bytes())      # below LEAN_BYTES: no cycle collections
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys

from ..progress import Stages
from ..targets.keras_jax.runtime import forget_compiles

__all__ = ["LeanStages", "release", "RELEASE_BEFORE", "RELEASE_AFTER", "CLEAR_AFTER", "LEAN_BYTES"]

#: models with at least this many bytes of weights get cycle collections between stages (issue 14's "large")
LEAN_BYTES = 40 * 2**20

#: stages that start after their inputs' garbage is gone: the emit stage's model (Keras layers and models
#: reference each other, so only a cycle collection frees it) before the written files are loaded again
RELEASE_BEFORE = frozenset({"load-emitted"})
#: stages whose temporaries are large (emitted weights, verification batches and activations)
RELEASE_AFTER = frozenset({"emit", "load-emitted", "verify-sizes", "verify", "trace", "grad"})
#: stages after which no compiled executable is run again by the conversion
CLEAR_AFTER = frozenset({"verify", "trace", "grad"})


def _trim():
    """glibc's ``malloc_trim(0)``: return free heap pages to the OS (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("c")
    try:
        ctypes.CDLL(name or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        pass


def release(executables=False, collect=True):
    """Collect cycles (``collect``) and return freed memory to the OS; ``executables``: also the emitted models'
    memoized forwards and their XLA executables (targets/keras_jax/runtime.py; nothing of the user's own)."""
    if executables:
        forget_compiles()
    if collect:
        gc.collect()
    _trim()


class LeanStages(Stages):
    """``progress.Stages`` that releases memory before the stages in ``RELEASE_BEFORE`` and after those in
    ``RELEASE_AFTER`` (see the module docstring); cycles are collected once ``weigh`` saw ``LEAN_BYTES``."""

    lean = True  # until weighed: a caller that never tells the size gets every collection
    frozen = entered = False

    def __enter__(self):
        self.entered = True
        return self

    def __exit__(self, *exc):
        self.entered = False
        if self.frozen:
            gc.unfreeze()
            self.frozen = False

    def weigh(self, weight_bytes):
        """The model's weight bytes: below ``LEAN_BYTES`` the stages skip the cycle collections; at or above, what
        lives now is frozen until the ``with`` block ends (see the module docstring); outside one,
        nothing is frozen, nor when the process froze objects itself (unfreezing would undo that)."""
        self.lean = weight_bytes >= LEAN_BYTES
        if self.lean and self.entered and not self.frozen and not gc.get_freeze_count():
            gc.freeze()
            self.frozen = True

    def run(self, name, fn, *args, **kwargs):
        if name in RELEASE_BEFORE:
            release(collect=self.lean)
        result = super().run(name, fn, *args, **kwargs)
        if name in RELEASE_AFTER:
            release(executables=name in CLEAR_AFTER, collect=self.lean)
        return result
