"""Which checks a conversion can afford: the stages that hold every weight in memory, against a weight budget.

Note [weight budget]: verification at the example's size and at the other sizes, the per-node trace and the
gradient check run the source and the emitted model whole, so each holds every weight (the source's pages of a
memory-mapped checkpoint, the emitted model's variables, and their activations) at once. Above
``weight_budget()`` bytes of weights (2 GiB, or ``PORTX_WEIGHT_BUDGET`` such as "8GB") those stages are not run:
report.json says they were skipped and why, the emitted model is built without its weights (every variable
uninitialised, no weight memory) for the parameter counts, and the TPU proof lowers it on abstract weights
(``jax.ShapeDtypeStruct``, targets/keras_jax/tpu.py), which costs no weight memory either; so do the gradient
program (``grad=True``: lowered for the CPU and TPU, not compared, Note [abstract gradients] in grad_program.py)
and the proof on a mesh (Note [abstract mesh proof] in targets/keras_jax/mesh_proof.py). The weights are still
written, shard by shard (Note [sharded keras weights]). Verification runs block by block instead, holding one
block's weights at a time (Note [streaming verification] in streaming.py).

Note [one pipeline]: the budget decides which checks run on real weights, not which code writes or loads them.
Every size is written by the same streamed writer (keras-jax: ``write_sharded``, tensor by tensor from the IR's
arrays, a memory-mapped tensor's pages released once written; torch-xla: ``write_weights``, shards only past
``--max-shard-size``). Below the budget the emitted model is loaded whole because the checks that need it whole
run: the end-to-end comparison at the example's size and the size checks, the trace, the gradients. Per-block rows
are not added there, measured (2026-12-06, ``benchmarks/memory_stages.py``'s 4-layer Llama, 27 MB, CPU seconds,
unprofiled; the split from one cProfile run): block by block, the verify stage took 1.25 s against 0.42 s for
the whole model's (whose compile at the example's size is already paid in the size checks: 2.8 s). The extra
second is not the blocks' runs but per-segment fixed costs: 6 segments (glue, 4 blocks of one structure, glue)
make 3 emitted models, each its model.py written, imported and built by Keras (~30 % of the stage), 3 XLA
compiles with the 6 runs (~45 %; the 3 later blocks rebind the first block's model and reuse its compile),
the rebinding of their weights (~15 %); the source's node-by-node run is ~13 %. Added to the whole-model checks it is +15 % of that conversion's 8.5 s of CPU, for
rows the whole-model trace already gives node by node, and every distinct block structure adds a build and a
compile (a ResNet's first block per stage differs from the rest). Cheaper rows are cut from the
loaded whole model instead (sub-models between its KerasTensors: no build, one compile per structure), and every
conversion below the budget now gets them that way (verification/block_rows.py, Note [block rows]). What
sets a small model's peak is not the weights' path but costs that do not follow its size
(docs/large_models.md "Small models' memory"): about 125 MB above the imports for a 0.02 MB CNN (XLA's
compiler and its code pages, the checks' compiles).

Example:
    >>> over_budget(graph)
    'weights of 2.5 GB exceed the 2.1 GB that whole-model checks may hold (PORTX_WEIGHT_BUDGET): ...'
"""
from __future__ import annotations

import os

from ..outputs.staging import size_text
from ..weights import shard_gb

__all__ = ["weight_budget", "over_budget", "BUDGET_ENV"]

BUDGET_ENV = "PORTX_WEIGHT_BUDGET"
_DEFAULT = 2 << 30


def weight_budget() -> int:
    """Bytes of weights above which whole-model checks are skipped (``PORTX_WEIGHT_BUDGET``, default 2 GiB)."""
    given = os.environ.get(BUDGET_ENV)
    return _DEFAULT if not given else int(shard_gb(given) * 1024**3)


def over_budget(graph) -> str:
    """'' when ``graph``'s weights fit the budget, else the reason the whole-model checks are skipped."""
    size, budget = graph.weight_bytes(), weight_budget()
    if size <= budget:
        return ""
    return (f"weights of {size_text(size)} exceed the {size_text(budget)} that whole-model checks may hold "
            f"({BUDGET_ENV}): verified block by block instead of whole; the size checks and the trace were "
            "skipped; the TPU proof (and with --grad the gradient program) lowered on abstract weights")
