"""Which ops have which trait (``ir.opdef.TRAITS``): the facts other stages ask of an op, kept with the ops.

``declare()`` sets each OpDef's ``traits``; ``ops/__init__`` calls it once every family is registered, and an
op name here that no family declares is an error there, so a renamed op cannot drop out silently.

Example:
    >>> from portx.ir import lookup
    >>> lookup("where").has("mask_reader")
    True
"""
from __future__ import annotations

from ..ir.opdef import REGISTRY, TRAITS
from .elementwise import BINARY_TABLE

__all__ = ["FAMILIES_WITH", "LAYOUT_WHY", "OPS_WITH", "WORDS", "declare"]

#: trait -> the ops that have it
OPS_WITH = {
    "fresh_output": ("conv", "conv_transpose", "batch_norm", "layer_norm", "group_norm", "linear", "add", "sub"),
    # not index_select or gather, whose index torch takes as int32/int64 only
    "unsigned_as_is": ("cast", "bitcast", "reshape", "permute", "expand", "concat", "stack", "split", "slice",
                       "select", "tile", "where"),
    "unsigned_in_range": ("div", "remainder", "fmod", "minimum", "maximum", "bitwise_and", "bitwise_or",
                          "bitwise_xor", "bitwise_right_shift", "abs", "clamp", "amax", "amin", "flip", "roll",
                          "gather", "index_select", "pad", "sort", "topk", "cummax", "cummin"),
    "mask_reader": ("where", "add", "attention", "minimum", "maximum"),
    "broadcasting": (*BINARY_TABLE, "where"),
    "decomposed": ("grid_sample", "lu", "lu_unpack", "cholesky_info"),
}

#: trait -> the op families whose every op has it (a family's new op gets it too)
FAMILIES_WITH = {
    "pointwise": ("elementwise", "dropout"),
    "rearranging": ("shape",),
}

#: op -> the word its output is named by in emitted code (``OpDef.word``; Note [variable names] in
#: targets/keras_jax/style.py) where the op's own name reads worse
WORDS = {"permute": "transpose", "attention": "context", "adaptive_avg_pool": "avg_pool",
         "adaptive_max_pool": "max_pool"}

#: op -> why a transpose left before it stays (``OpDef.layout_why``; the layout report's ``reason``)
LAYOUT_WHY = {
    "reshape": "a reshape after it merges or splits the permuted axes with others",
    "matmul": "a matmul whose operands are stored in different orders (the contracted and batch axes must agree)",
    "attention": "an attention whose q, k, v are stored in different orders, or that runs unfused",
    "linear": "a linear layer (it contracts the last axis; sinking past it needed more transposes)",
    "split": "a split whose outputs are read in different orders",
    "layer_norm": "a norm over trailing axes that the stored order does not keep trailing"}


def declare() -> None:
    """Give every OpDef its traits, word and layout reason; an unknown trait or op name is a ValueError naming it."""
    for trait, names in OPS_WITH.items():
        if trait not in TRAITS:
            raise ValueError(f"ops/traits.py: unknown trait {trait!r}")
        for name in names:
            if name not in REGISTRY:
                raise ValueError(f"ops/traits.py: {trait} names op {name!r}, which no family declares")
            REGISTRY[name].traits = REGISTRY[name].traits | {trait}
    for trait, families in FAMILIES_WITH.items():
        if trait not in TRAITS:
            raise ValueError(f"ops/traits.py: unknown trait {trait!r}")
        for family in families:
            members = [op for op in REGISTRY.values() if op.family == family]
            if not members:
                raise ValueError(f"ops/traits.py: {trait} names family {family!r}, which no op belongs to")
            for op in members:
                op.traits = op.traits | {trait}
    for name, word in WORDS.items():
        if name not in REGISTRY:
            raise ValueError(f"ops/traits.py: WORDS names op {name!r}, which no family declares")
        REGISTRY[name].word = word
    for name, why in LAYOUT_WHY.items():
        if name not in REGISTRY:
            raise ValueError(f"ops/traits.py: LAYOUT_WHY names op {name!r}, which no family declares")
        REGISTRY[name].layout_why = why
