"""LeanStages: cycle collections between heavy stages for large models only (verification/memory.py)."""
import gc

from portx.verification.memory import LEAN_BYTES, RELEASE_AFTER, LeanStages


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
