"""Whether a conversion's code is structured where its source repeats (Note [structured code] in
src/portx/targets/structure.py), for the sweeps (tests/test_hf_text.py, tests/frontends/test_keras_hub.py): the
emitted graph written again by the target's emitter, with its blocks and with none (the flat form).

Example:
    >>> shape = assert_structured(result, "keras-jax")   # every repeated block written by one def
    >>> shape["defs"], shape["lines"] < shape["flat"]
    (1, True)
"""
from __future__ import annotations

import re
from collections import Counter

from portx.targets import TARGETS

__all__ = ["structure", "assert_structured", "assert_keras_trains_saves_reloads"]

_DOC = re.compile(r'^\s*"""Source blocks (.*)\."""$', re.M)


def structure(graph, target) -> dict:
    """{"repeated": the block keys whose structure occurs twice or more, "written": the keys a block function or
    class names, "defs": how many the code has, "lines": lines of the code, "flat": lines with the blocks left
    flat} of ``graph`` (a conversion's emitted graph) written for ``target``."""
    blocks = graph.meta.get("blocks") or []
    kinds = Counter(b["kind"] for b in blocks)
    emitter = TARGETS[target].emitter(graph)
    text = emitter.emit_graph()
    defs = list(getattr(emitter, "functions", None) or getattr(emitter, "classes", None) or [])
    written = set()
    ordered = sorted(blocks, key=lambda b: b["start"])
    for match in _DOC.finditer("\n".join(defs)):
        span = re.fullmatch(r"(\S+) to (\S+) \(\d+ blocks\)", match.group(1))
        if span:  # many blocks, the first to the last: the blocks between them nested as deep as the first
            at = [b["key"] for b in ordered].index
            depth = _depth(ordered[at(span[1])], blocks)
            written.update(b["key"] for b in ordered[at(span[1]):at(span[2]) + 1] if _depth(b, blocks) == depth)
            continue
        keys = re.sub(r", \.\.\. \(\d+ blocks\)$", ", ...", match.group(1)).split(", ")
        if keys[-1] == "...":  # a long list names the first block of each kind only: the rest are of its kind
            listed = {b["kind"] for b in blocks if b["key"] in keys[:-1]}
            keys = [b["key"] for b in blocks if b["kind"] in listed]
        written.update(keys)
    flat = TARGETS[target].emitter(graph.replace(meta={**graph.meta, "blocks": []})).emit_graph()
    return {"repeated": [b["key"] for b in blocks if kinds[b["kind"]] > 1], "written": sorted(written),
            "defs": len(defs), "lines": len(text.splitlines()), "flat": len(flat.splitlines()),
            "longer": emitter.longer}


def _depth(block, blocks) -> int:
    """How many of ``blocks`` hold ``block`` (its parents that are blocks: a stage such as ``conv2`` is none). A
    family's unnumbered first block is keyed as its container is (MobileNetV3's ``expanded_conv`` beside
    ``expanded_conv_1``, parent ``expanded_conv``: Note [an unnumbered first block]) and holds none."""
    by_key, depth, parent = {b["key"]: b for b in blocks if not b.get("first")}, 0, block.get("parent")
    while parent in by_key:
        depth, parent = depth + 1, by_key[parent].get("parent")
    return depth


def assert_structured(result, target, repeats=True, shorter=True, longer=False) -> dict:
    """Assert that every block of ``result``'s graph whose structure repeats is written once, in a block function
    (keras-jax) or class (torch-xla); with ``shorter``, that the code is shorter than its flat form (blocks of a
    line or two are not); with ``repeats``, that some block repeats (the source has two layers alike). With
    ``longer``, flat code passes where the target found its structured form longer (Note [structured only where
    shorter]: a stage's first block a class of its own, two blocks a stage). Returns ``structure``'s dict."""
    shape = structure(result.graph, target)
    missing = sorted(set(shape["repeated"]) - set(shape["written"]))
    if longer and shape["longer"] and not shape["defs"]:
        return shape
    assert not missing, f"repeated blocks written flat: {missing} ({shape})"
    assert not repeats or shape["repeated"], f"no repeated block found ({shape})"
    if shape["repeated"]:
        assert shape["defs"] and (shape["lines"] < shape["flat"] or not shorter), shape
    return shape


def assert_keras_trains_saves_reloads(converted, x, outputs, folder) -> None:
    """A converted Keras model fits one epoch on ``x`` (zero targets of shape ``outputs``), saves to a ``.keras``
    file in ``folder`` and reloads to the same outputs."""
    import keras
    import numpy as np

    converted.compile(optimizer="sgd", loss="mse")
    converted.fit(x, np.zeros(outputs, np.float32), epochs=1, verbose=0)
    converted.save(folder / "again.keras")
    again = keras.saving.load_model(folder / "again.keras")
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(converted(x)), rtol=1e-5, atol=1e-5)
