"""The ordered pass list, and a runner that names the pass at fault.

Example:
    >>> graph = run_passes(graph, "keras-jax")
"""
from __future__ import annotations

from ..ir import IRError, validate
from .blocks import record_blocks
from .fold import (drop_dropout, drop_zero_dropout, fold_batch_norm, fold_pool_then_reshape,
                   merge_reshapes_and_permutes, remove_dead_nodes)
from .fold_pad import fold_pad_into_conv
from .fuse_attention import fuse_attention
from .fuse_idioms import fuse_idioms
from .layout import to_channels_first, to_channels_last
from .sharding import record_sharding
from .legalize import (cast_float64_to_float32, compute_float8_in_float32, decompose, legalize_for_keras_jax,
                       legalize_for_torch_xla, narrow_int64_to_int32)

__all__ = ["PIPELINES", "INFERENCE_ONLY", "inference_skip", "run_passes"]

#: target -> ordered passes (Graph -> Graph). After the source-level clean-ups (dead nodes; softmax and GELU written
#: out op by op fused into one op each: passes/fuse_idioms.py; attention written out as matmul/softmax/matmul fused
#: into one op: passes/fuse_attention.py) and the decompositions both targets share (passes/legalize/decompose.py),
#: each runs its op table's node rewrites (op_tables/<target>.toml, so emitters see only legal IR) and the dtype
#: passes its table's dtype rows name; tests/passes/legalize/test_tables.py checks that every rule a table names is run.
PIPELINES = {
    "keras-jax": (remove_dead_nodes, fuse_idioms, fuse_attention, decompose, legalize_for_keras_jax,
                  merge_reshapes_and_permutes, fold_pool_then_reshape, cast_float64_to_float32, narrow_int64_to_int32,
                  drop_zero_dropout, drop_dropout, fold_batch_norm, to_channels_last, compute_float8_in_float32,
                  record_sharding, record_blocks),
    # torch-xla: a Keras source's NHWC -> NCHW -> op -> NHWC pairs cancel (passes/layout/__init__.py); int64
    # stays (op_tables/torch_xla.toml dtype.int64: the emitted module keeps torch's index dtypes); a Keras
    # ZeroPadding2D before a "valid" Conv2D is the conv's padding (Note [a pad folded into its convolution])
    "torch-xla": (remove_dead_nodes, fuse_idioms, fuse_attention, decompose, legalize_for_torch_xla,
                  to_channels_first, merge_reshapes_and_permutes, fold_pad_into_conv, fold_pool_then_reshape,
                  cast_float64_to_float32, drop_zero_dropout, drop_dropout, fold_batch_norm, record_sharding,
                  record_blocks),
}
#: passes that give up training behaviour, run only when asked (``--fold-bn``, ``--inference``)
INFERENCE_ONLY = ("drop_dropout", "fold_batch_norm")


def inference_skip(fold_bn=False, inference=False) -> tuple:
    """The ``skip`` for ``run_passes`` under convert's flags: the inference-only passes not asked for."""
    if inference:
        return ()
    return ("drop_dropout",) if fold_bn else INFERENCE_ONLY


def run_passes(graph, target, check=True, skip=INFERENCE_ONLY):
    """Apply the target's passes in order (minus those named in ``skip``), validating after each.

    By default the emitted model trains like the source: batch norms stay layers and dropouts stay
    (``skip=INFERENCE_ONLY``); ``skip=()`` folds and drops them.
    """
    for fn in PIPELINES[target]:
        if fn.__name__ in skip:
            continue
        try:
            graph = fn(graph)
            if check:
                validate(graph)
        except IRError as exc:
            raise IRError(f"pass {fn.__name__}: {exc}") from exc
    return graph
