"""LeanStages: cycle collections between heavy stages for large models only; the size checks' largest batch
bounded by the weights; JAX's caches released (verification/memory.py)."""
import gc

import numpy as np
import pytest

from portx.ir.text import parse_graph
from portx.verification.dynamic import sample_sizes
from portx.verification.memory import (LEAN_BYTES, RELEASE_AFTER, LeanStages, largest_batch, per_sample_bytes,
                                       release)


def _full_collections(stages, stage):
    """How many full (generation 2) collections running ``stage`` triggers, automatic collection off."""
    seen = []

    def count(phase, info):
        if phase == "start" and info["generation"] == 2:
            seen.append(1)

    enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(count)
    try:
        assert stages.run(stage, lambda: 42) == 42
    finally:
        gc.callbacks.remove(count)
        if enabled:
            gc.enable()
    return len(seen)


def test_small_models_skip_the_collections():
    stages = LeanStages(progress=None)
    stages.weigh(LEAN_BYTES - 1)
    assert all(_full_collections(stages, stage) == 0 for stage in sorted(RELEASE_AFTER))
    assert set(stages.times) == set(RELEASE_AFTER)  # the stages still ran and were timed


def test_large_and_unweighed_models_collect_after_heavy_stages():
    large = LeanStages(progress=None)
    large.weigh(LEAN_BYTES)  # outside a with block: collects, never freezes
    assert not large.frozen
    assert _full_collections(large, "emit") == 1
    assert _full_collections(large, "load-emitted") == 2  # before (the emit stage's model) and after
    assert _full_collections(large, "lower") == 0  # not a heavy stage
    assert _full_collections(LeanStages(progress=None), "verify") == 1  # never weighed: collect, to be safe


def test_a_large_model_freezes_what_lives_until_the_block_ends():
    before = gc.get_freeze_count()
    with LeanStages(progress=None) as stages:
        stages.weigh(LEAN_BYTES)
        assert gc.get_freeze_count() > before
        assert _full_collections(stages, "emit") == 1  # still collected: what the stages made is not frozen
    assert gc.get_freeze_count() == before
    with LeanStages(progress=None) as small:
        small.weigh(LEAN_BYTES - 1)
        assert gc.get_freeze_count() == before


def _linear(batch, features, outputs):
    """A linear layer's graph at ``batch``: weights of ``features * outputs`` floats."""
    weight = np.zeros((outputs, features), np.float32)
    return parse_graph(f"""graph model(%x: float32[{batch}x{features}]) {{
      param %fc.weight: float32[{outputs}x{features}]
      %y: float32[{batch}x{outputs}] = linear(%x, %fc.weight, _) {{}}  # fc
      return %y
    }}""", {"fc.weight": weight})


def test_per_sample_activations_are_three_of_the_largest_value_per_row():
    assert per_sample_bytes(_linear(2, 4, 1000), batch=2) == 3 * 1000 * 4


@pytest.mark.parametrize("features, outputs, wanted, expected", [
    (16, 1000, 8, 8),                # small activations: batch 8, as always
    (4, 2_000_000, 8, 3),            # 24 MB a row against 32 MB of weights: 3, never below (still not 1 or 2)
    (64, 2_000_000, 8, 5),           # 512 MB of weights: a quarter of them holds 5 rows
    (4, 2_000_000, 2, 2),            # never above what was wanted
])
def test_the_largest_batch_checked_follows_the_weights(features, outputs, wanted, expected):
    graph = _linear(2, features, outputs)
    assert largest_batch(graph, 2, wanted) == expected


def test_sample_sizes_take_the_largest_batch():
    batch = {"symbol": "batch", "size": 2, "example": 1}
    assert sample_sizes(batch) == [1, 8]
    assert sample_sizes(batch, largest=3) == [1, 3]
    assert sample_sizes({**batch, "example": 4}, largest=3) == [4, 1, 3]


def test_release_forgets_jax_compiles():
    import jax

    double = jax.jit(lambda x: x * 2)
    double(np.ones(3, np.float32))
    assert double._cache_size() == 1
    release(executables=True, collect=False)  # Note [build caches]
    assert double._cache_size() == 0
