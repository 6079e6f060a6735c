"""The name of the argument a number in an emitted statement is, for the block function or class argument it
becomes.

Note [block arguments named for what they feed]: a number that differs between the blocks of a kind becomes an
argument of the block's function (``def block(x, filters, name)``) or class (``__init__(self, in_channels, ...)``),
named after the layer argument it feeds, as keras.applications writes ``block(inputs, activation, drop_rate, name,
filters_in, filters_out, kernel_size, strides, ...)``. A keyword names itself (``strides=2``); a positional one is
named by the callee's signature (``layers.ZeroPadding2D((0, 1))``: ``padding``; ``layers.Dropout(0.2)``: ``rate``;
``ops.pad(x, ...)``: ``pad_width``), read from the framework the code imports (``inspect.signature`` on
``keras.layers``, ``keras.ops``, ``torch.nn``...), with a table of the common layers for a callee that has no
signature; a number inside a tuple is the tuple's argument. Only where none of that names it is it ``size``.

Example:
    >>> argument_name("y = layers.ZeroPadding2D(((0, ")
    'padding'
    >>> argument_name("y = layers.Conv2D(8, 3, strides=")
    'strides'
"""
from __future__ import annotations

import functools
import importlib
import inspect
import re

__all__ = ["argument_name", "ARG_NAMES"]

#: the names of the first positional arguments of layers and modules, where no signature says them
ARG_NAMES = {"Conv1D": ("filters",), "Conv2D": ("filters",), "Conv3D": ("filters",), "Dense": ("units",),
             "Conv2DTranspose": ("filters",), "Conv1d": ("in_channels", "out_channels"),
             "Conv2d": ("in_channels", "out_channels"), "Linear": ("in_features", "out_features"),
             "BatchNorm2d": ("num_features",), "BatchNorm1d": ("num_features",), "LayerNorm": ("normalized_shape",),
             "Embedding": ("num_embeddings", "embedding_dim"), "GroupNorm": ("num_groups", "num_channels"),
             "ZeroPadding1D": ("padding",), "ZeroPadding2D": ("padding",), "ZeroPadding3D": ("padding",),
             "Dropout": ("rate",)}
#: the modules emitted code calls through, by the name it imports them as
_MODULES = {"layers": "keras.layers", "ops": "keras.ops", "nn": "torch.nn", "F": "torch.nn.functional",
            "torch": "torch"}
_CALLEE = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s*$")
_KEYWORD = re.compile(r"^\s*([A-Za-z_]\w*)\s*=")


def argument_name(text: str, fallback: str = "size") -> str:
    """The name of the argument that ``text`` (a statement up to a number, with the block's other numbers and
    variables in it) ends inside (Note [block arguments named for what they feed]); ``fallback`` where none."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        char = text[i]
        if char in ")]}":
            depth += 1
        elif char in "([{" and depth:
            depth -= 1
        elif char in "([{":
            callee = _CALLEE.search(text[:i]) if char == "(" else None
            if callee is None:  # a tuple or list: the number is part of the argument around it
                continue
            args = _top_level(text[i + 1:])
            keyword = _KEYWORD.match(args[-1])
            if keyword:
                return keyword.group(1)
            names = _positional_names(callee.group(1))
            return names[len(args) - 1] if len(args) <= len(names) else fallback
    return fallback


def _top_level(text: str) -> list:
    """``text`` (a call's arguments, maybe unfinished) split at the commas outside brackets."""
    depth, parts, start = 0, [], 0
    for i, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if char == "," and not depth:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


@functools.lru_cache(maxsize=None)
def _positional_names(callee: str) -> tuple:
    """The positional parameter names of ``callee`` (``layers.ZeroPadding2D``, ``nn.Conv2d``, ``ops.pad``): its
    signature where the framework gives one, else ``ARG_NAMES``."""
    head, _, attr = callee.rpartition(".")
    found = _signature_names(_MODULES.get(head), attr) if head in _MODULES else None
    return found if found is not None else ARG_NAMES.get(attr, ())


def _signature_names(module: str, attr: str):
    """``module.attr``'s parameters that may be passed by position (``self`` left out), or None."""
    try:
        target = getattr(importlib.import_module(module), attr)
        params = inspect.signature(target).parameters.values()
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    names = tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    return names or None
