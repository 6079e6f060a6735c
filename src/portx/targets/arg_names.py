"""The name of the argument a number in an emitted statement is, for the block function or class argument it
becomes.

Note [block arguments named for what they feed]: a number that differs between the blocks of a kind becomes an
argument of the block's function (``def block(x, filters, name)``) or class (``__init__(self, in_channels, ...)``),
named after the layer argument it feeds, as keras.applications writes ``block(inputs, activation, drop_rate, name,
filters_in, filters_out, kernel_size, strides, ...)``. A keyword names itself (``strides=2``); a positional one is
named by the callee's signature (``layers.ZeroPadding2D((0, 1))``: ``padding``; ``layers.Dropout(0.2)``: ``rate``;
``ops.pad(x, ...)``: ``pad_width``), read from the framework the code imports (``inspect.signature`` on
``keras.layers``, ``keras.ops``, ``torch.nn``...), with a table of the common layers for a callee that has no
signature; a number inside a tuple is the tuple's argument; a function is ``act`` (Note [the activation as an
argument] in joinable.py). Only where none of that names it is it ``size``.

Note [arguments named for what differs]: two numbers that differ between the blocks and feed the same argument of
different layers (EfficientNet's expand, squeeze-excite and project convs all take ``filters``) were ``filters``,
``filters_1``, ``filters_2``. Each is named after the layer it first feeds instead, as keras.applications writes
``filters_in``, ``filters_out``: its name in the block (``f"{name}_expand_conv"``, ``self.expand_conv``, else the
variable the statement binds) without the words every such layer has (``conv``, ``pointwise``, a number): ``filters_
expand``, ``filters_se_reduce``, ``filters_project``; Xception's ``out_channels_sepconv1``, ``out_channels_sepconv2``.
A role two of them share is written whole (``adjust_conv_1``), and where that is shared too (numbers of one
statement: ``ops.pad``'s widths) the numbering stays. The names depend only on the block's statements.

Example:
    >>> argument_name("y = layers.ZeroPadding2D(((0, ")
    'padding'
    >>> argument_name("y = layers.Conv2D(8, 3, strides=")
    'strides'
    >>> distinct_names(["filters", "filters", "rate"], ["expand_conv", "project_conv", "drop"])
    ['filters_expand', 'filters_project', 'rate']
"""
from __future__ import annotations

import functools
import importlib
import inspect
import re

__all__ = ["argument_name", "distinct_names", "param_names", "ARG_NAMES"]

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
#: the words of a layer's name that say what kind of layer it is, not what it does in its block
_KIND_WORDS = {"conv", "conv1d", "conv2d", "conv3d", "dense", "linear", "bn", "norm", "layer", "depthwise",
               "pointwise"}


def distinct_names(bases, roles) -> list:
    """Names for the block arguments ``bases`` (``argument_name`` of each) that fed layers named ``roles`` (their
    names in the block, "" where none): a base two of them share gets its role (Note [arguments named for what
    differs])."""
    levels = [(_short(role), role) for role in roles]
    names = []
    for base, own in zip(bases, levels):
        peers = [level for b, level in zip(bases, levels) if b == base]
        found = next((f"{base}_{own[i]}" for i in (0, 1) if len(peers) > 1 and own[i]
                      and sum(p[i] == own[i] for p in peers) == 1), base)
        names.append(found if found.isidentifier() else base)
    return names


def _short(role) -> str:
    """A layer's name without the words of its kind: ``expand_conv`` -> ``expand``, ``adjust_conv_1`` -> ``adjust``."""
    return "_".join(w for w in role.split("_") if w and not w.isdigit() and w.lower() not in _KIND_WORDS)


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


def param_names(inst, cols, params=None) -> list:
    """Names for the number columns ``cols`` of ``inst`` (an Instance, targets/structure.py): each the layer argument
    it feeds (Note [block arguments named for what they feed]: ``layers.ZeroPadding2D(((0, 1), (0, 1)), ...)``'s
    numbers -> ``padding``), and where two feed one argument the layer's role too (Note [arguments named for what
    differs]): ``["filters_expand", "filters_project"]``. ``params`` ({column: (parameter, multiple)}): a parameter
    is named where it is first written as it is (an optional part's column before its first common one: the
    expand conv's ``filters``, not the later ``ops.reshape``'s ``newshape``)."""
    first = {}
    for col, (p, multiple) in sorted((params or {}).items()):
        if multiple == 1:
            first.setdefault(p, col)
    cols = [first.get(params[col][0], col) if params and col in params else col for col in cols]
    found, count = {}, 0
    for parts, _ in inst.rows:
        for j, (kind, value) in enumerate(parts):
            if kind == "n":
                text = "".join(_PLACEHOLDER.get(k, v) for k, v in parts[:j])
                found[count] = ("act" if value[:1].isalpha() else argument_name(text), _role(inst, parts))
                count += 1
    bases, roles = zip(*[found.get(col, ("size", "")) for col in cols]) if cols else ((), ())
    return distinct_names(bases, roles)


def _role(inst, parts) -> str:
    """The name in its block of the layer a statement makes (``expand_conv``), else of the variable it binds."""
    for kind, value in parts:
        if kind in "sa" and isinstance(value, str):
            return value.strip("_")
        if kind in "ea" and isinstance(value, tuple):  # a block named by a suffix
            return "".join(value).strip("_")
        if kind == "k":
            return value[0]
    bound = parts[0][1] if parts and parts[0][0] == "v" else ""
    return bound[len(inst.prefix) + 1:] if bound.startswith(inst.prefix + "_") else bound


#: what ``param_names`` reads a statement's pieces as: the block's own names and numbers as plain tokens
_PLACEHOLDER = {"v": "v", "n": "0", "s": "''", "a": "self.a"}
