"""Keeping a conversion's peak memory low: give back what a finished stage no longer needs.

A conversion holds the source, the emitted model and, stage after stage, the arrays and XLA executables
of verification runs it will not make again. After each heavy stage ``LeanStages`` collects cycles and
hands freed heap pages back to the operating system (glibc keeps them otherwise, so the next stage's
peak stacks on the last one's); after the last run of the emitted model's own forward (the ``verify``
stage; the size checks drop each size's themselves: Note [one compile at a time] in dynamic.py) it also drops
that forward's compiled executables, which the trace, gradient and TPU stages do not reuse (they compile their
own functions). Verification keeps its runs and tolerances; only the largest batch the size
checks run follows the weights (Note [activations follow the weights]), and glibc's mmap threshold stays fixed
during a conversion (Note [fixed mmap threshold]).

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

import gc
import math

import numpy as np

from ..progress import Stages
from ..targets.keras_jax.runtime import forget_compiles
from ..weights.heap import MMAP_THRESHOLD, fix_mmap_threshold, trim_heap

__all__ = ["LeanStages", "release", "RELEASE_BEFORE", "RELEASE_AFTER", "CLEAR_AFTER", "LEAN_BYTES", "largest_batch",
           "fix_mmap_threshold", "per_sample_bytes", "ACTIVATION_SHARE", "ACTIVATION_FLOOR", "MMAP_THRESHOLD"]

#: models with at least this many bytes of weights get cycle collections between stages (issue 14's "large")
LEAN_BYTES = 40 * 2**20

#: stages that start after their inputs' garbage is gone: the emit stage's model (Keras layers and models
#: reference each other, so only a cycle collection frees it) before the written files are loaded again
RELEASE_BEFORE = frozenset({"load-emitted"})
#: stages whose temporaries are large (emitted weights, verification batches and activations)
RELEASE_AFTER = frozenset({"emit", "load-emitted", "verify-sizes", "verify", "blocks", "trace", "grad"})
#: stages after which no compiled executable is run again by the conversion; and "load-emitted", whose build
#: leaves JAX's tracing caches behind (Note [build caches])
CLEAR_AFTER = frozenset({"load-emitted", "verify", "blocks", "trace", "grad"})

# Note [build caches]: building the emitted Keras model traces every layer's output spec through JAX (one small
# cache entry per layer and shape), and those entries outlive the build: 38 MB for resnet50 (98 MB of weights),
# 57 MB for swin_t (109 MB), held through every later stage. ``release(executables=True)`` empties JAX's caches
# (``jax.clear_caches``) with portx's memoized forwards; a function the caller jitted before the conversion
# compiles again at its next call, which is the only effect on it.


# Note [fixed mmap threshold]: glibc serves an allocation of at least M_MMAP_THRESHOLD bytes with its own mmap,
# unmapped when freed, and smaller ones from its heaps, where freed memory stays in the process. The threshold
# starts at 128 KB but rises to the size of every mmapped block freed (up to 32 MB), so after the first large
# arrays come and go (a weight read from the file, an activation) later ones of that size land in the heaps
# and stay resident after they are freed: loading resnet50's emitted model peaked 127 MB above what it keeps
# (98 MB of weights), 56 MB with the threshold fixed. ``fix_mmap_threshold`` fixes it at MMAP_THRESHOLD for
# the process (glibc has no way to restore the rising one); what it costs is a page fault per page of each
# large array, which a conversion's compiles and runs do not notice.

def release(executables=False, collect=True):
    """Collect cycles (``collect``) and return freed memory to the OS; ``executables``: also the emitted models'
    memoized forwards and their XLA executables (targets/keras_jax/runtime.py; nothing of the user's own)."""
    if executables:
        forget_compiles()
        import jax

        jax.clear_caches()  # Note [build caches]
    if collect:
        gc.collect()
    trim_heap()


class LeanStages(Stages):
    """``progress.Stages`` that releases memory before the stages in ``RELEASE_BEFORE`` and after those in
    ``RELEASE_AFTER`` (see the module docstring); cycles are collected once ``weigh`` saw ``LEAN_BYTES``."""

    lean = True  # until weighed: a caller that never tells the size gets every collection
    frozen = entered = False

    def __enter__(self):
        self.entered = True
        fix_mmap_threshold()  # Note [fixed mmap threshold]
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


# Note [activations follow the weights]: the size checks run the source and the emitted model at batch 8
# (BATCH_SAMPLES), and their activations grow with the batch, not with the model: resnet50 at 224x224 holds
# 107 MB of XLA temporaries at batch 8 (14 MB at 1) beside its 98 MB of weights, and torch's eager run as much,
# so the check alone was over the memory goal (peak <= 2.5x the weights). The largest batch checked is the
# largest of BATCH_SAMPLES' whose estimated activations fit ACTIVATION_SHARE of the weights (at least
# ACTIVATION_FLOOR: small models keep batch 8), but never below 3, which differs from both the example's size
# and the size a batch of one is traced at (ONE_TRACED_AT): the check still proves the batch free.

#: the size checks' activations may take this share of the weight bytes, or ACTIVATION_FLOOR when more
ACTIVATION_SHARE, ACTIVATION_FLOOR = 0.25, 16 << 20


def per_sample_bytes(graph, batch) -> int:
    """An estimate of one sample's live activations: three times the largest intermediate value (a node's input,
    its output and one skip connection), over ``batch`` (the size the graph was traced at)."""
    largest = max((math.prod(v.type.shape) * _itemsize(v.type.dtype) for node in graph.nodes for v in node.outputs
                   if v.type.is_static), default=0)
    return 3 * largest // max(1, batch)


def _itemsize(dtype) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:  # ml_dtypes' floats: bfloat16 (2 bytes) and the 8-bit ones
        return 1 if "8" in dtype else 2


def largest_batch(graph, batch, wanted) -> int:
    """The largest batch the size checks run (Note [activations follow the weights]): ``wanted`` unless its
    activations exceed the share of ``graph``'s weights. Example: ``largest_batch(graph, 2, 8)`` -> 3 (resnet50)."""
    allowed = max(ACTIVATION_FLOOR, int(ACTIVATION_SHARE * graph.weight_bytes()))
    fits = allowed // max(1, per_sample_bytes(graph, batch))
    return max(min(wanted, fits), min(wanted, 3))
