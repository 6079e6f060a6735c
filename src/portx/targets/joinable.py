"""A block's statements with a pad's widths and an activation each one value, so that kinds of block which differ
there join as one function or class (Note [optional parts] in optional_parts.py).

Note [pad widths as one argument]: EfficientNet pads before each stride-2 depthwise conv by what keras.applications'
``correct_pad`` gives for its kernel and input: ((0, 1), (0, 1)) in one block, ((1, 2), (1, 2)) in another. Read
number by number the widths were two arguments only the strided blocks pass (``pad_width, pad_width_1``), which
read worse than a second function; keras.applications passes them as one, ``ZeroPadding2D(padding=correct_pad(x,
kernel_size))``. Where kinds of block are joined, a pad's widths are one value, an argument of the block
(``pad_width=((0, 0), (1, 2), (1, 2), (0, 0))``, torch ``pad=(1, 2, 1, 2)``), and the statement reads
``ops.pad(x, pad_width)``.

Note [the activation as an argument]: MobileNetV3's blocks are ReLU blocks or hard-swish blocks, and
keras.applications writes one ``_inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio,
activation, block_id)`` that calls the ``activation`` it is given. The activation's statement is one value too:
Keras' ``layers.ReLU(name=...)`` and ``layers.Activation('hard_silu', name=...)`` read ``layers.Activation(
keras.activations.relu, name=...)`` (the same function; a ReLU block's layers take the name the hard-swish blocks
give theirs, ``_activation`` for ``_re_lu``, where no layer of the block has it: they hold no weights), and torch's
``F.relu(x, inplace=True)`` reads ``<F.relu>(x, inplace=True)``. Where the kinds differ there the function is an
argument (``act``, which ``keras.activations.relu`` or ``keras.activations.hard_silu`` is passed for; torch
``F.relu`` or ``F.hardswish``, ``self.act(x, inplace=True)``: as timm's ``act_layer``, named short so that the
values it makes keep their names, ``activation``, ``activation_1``); where they do not, the statement is written as
it was (``as_written``, ``restored``: ``layers.ReLU(name=...)``, ``layers.Activation('silu', ...)``).

Only the copies the join reads are so (``joinable``); kinds that stay as they were keep their statements.

Example:
    >>> [p for p, _ in joinable(inst).rows][3]
    [('v', 'dwconv_pad'), ('t', ' = ops.pad('), ('v', 'x'), ('t', ', '), ('n', '((0, 0), (0, 1), (0, 1), (0, 0))'),
     ('t', ')')]
"""
from __future__ import annotations

import ast
import re
from dataclasses import replace

__all__ = ["joinable", "as_written", "restored"]

_PAD = re.compile(r" = (?:ops|F)\.pad\($")
#: Keras activation layers written as ``layers.Activation(<function>, name=...)``; torch's in-place activations
_KERAS_ACT = re.compile(r"^ = layers\.(?:ReLU\(|Activation\('(\w+)', )name=$")
_TORCH_ACT = re.compile(r"^ = F\.(relu|hardswish|silu|gelu|relu6|hardsigmoid|elu|leaky_relu)\($")
_KERAS_FN = re.compile(r"^keras\.activations\.(?:(\w+)|get\('(\w+)'\))$")
_RELU = "\0ReLU"


def joinable(inst):
    """A copy of ``inst`` (an Instance) whose pads and activations are one value each (Note [pad widths as one
    argument], Note [the activation as an argument])."""
    names = {v for parts, _ in inst.rows for k, v in parts if k == "s"}
    rows = [(_activation(_pad(parts), names), comment) for parts, comment in inst.rows]
    return replace(inst, rows=rows, numbers=[v for parts, _ in rows for k, v in parts if k == "n"])


def as_written(value) -> str:
    """A value as a statement writes it where it is no argument: ``keras.activations.hard_silu`` -> ``'hard_silu'``;
    a ReLU layer's ``keras.activations.relu`` a mark that ``restored`` reads (``keras.activations.get('relu')``:
    ``layers.Activation('relu')``'s)."""
    found = _KERAS_FN.match(value)
    return value if not found else _RELU if found.group(1) == "relu" else repr(found.group(1) or found.group(2))


def restored(line) -> str:
    """A rendered statement with a ReLU layer written as its source wrote it: ``layers.ReLU(name=...)``."""
    return line.replace(f"layers.Activation({_RELU}, ", "layers.ReLU(")


def _pad(parts) -> list:
    """``parts`` of ``y = ops.pad(x, <literal>)`` (or ``F.pad``) with the literal one ("n", text) piece; else as
    they are."""
    if len(parts) < 5 or [k for k, _ in parts[:3]] != ["v", "t", "v"] or not _PAD.search(parts[1][1]):
        return parts
    rest = "".join(v for _, v in parts[3:])
    if any(k not in "tn" for k, _ in parts[3:]) or not rest.startswith(", ") or not rest.endswith(")"):
        return parts
    try:
        ast.literal_eval(rest[2:-1])
    except (ValueError, SyntaxError):
        return parts
    return parts[:3] + [("t", ", "), ("n", rest[2:-1]), ("t", ")")]


def _activation(parts, names) -> list:
    """``parts`` of an activation statement with its function one ("n", text) piece (Note [the activation as an
    argument]); else as they are."""
    kinds = [k for k, _ in parts]
    if kinds == ["v", "t", "s", "t", "v", "t"] and parts[3][1] == ")(" and parts[5][1] == ")":
        found = _KERAS_ACT.match(parts[1][1])
        if found:
            own = re.sub(r"^_re_lu(?=_\d+$|$)", "_activation", parts[2][1]) if not found.group(1) else parts[2][1]
            name = own if own == parts[2][1] or own not in names else parts[2][1]
            fn = "relu" if not found.group(1) else found.group(1) if found.group(1) != "relu" else "get('relu')"
            return [parts[0], ("t", " = layers.Activation("), ("n", f"keras.activations.{fn}"), ("t", ", name="),
                    ("s", name), *parts[3:]]
    if kinds[:4] == ["v", "t", "v", "t"] and len(parts) == 4 and parts[3][1] in (")", ", inplace=True)"):
        found = _TORCH_ACT.match(parts[1][1])
        if found:
            return [parts[0], ("t", " = "), ("n", f"F.{found.group(1)}"), ("t", "("), parts[2], parts[3]]
    return parts
