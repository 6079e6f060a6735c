"""Helpers shared by the JAX import rules (``ops/*_jax.py``): layout moves that skip identities and fold constants.

A rule receives a ``JaxCall`` (frontends/jax/__init__.py); these helpers only use its public methods, so
``ops`` still imports nothing but ``ir``.

Note [lazy relayout]: a weight a rule rearranges (a Keras ``(in, heads, dim)`` kernel as a torch ``(out, in)``
weight) is stored as NumPy's strided view of the source's array, not a copy: the transpose is paid when a target
writes the tensor (``tensor_view`` in targets/torch_xla/shards.py copies one tensor at a time into its shard), so
the IR of a model holds no second copy of its weights. Only a reshape NumPy cannot express as a view copies.

Example:
    >>> w = arranged(call, 1, perm=(3, 2, 0, 1))   # HWIO kernel -> OIHW, in NumPy when it is a weight
"""
from __future__ import annotations

import numpy as np

from .shape import PERMUTE, RESHAPE

__all__ = ["permuted", "reshaped", "arranged", "inverse", "torch_name", "named"]


def inverse(perm) -> tuple:
    """The permutation that undoes ``perm``: ``inverse((0, 2, 3, 1))`` -> ``(0, 3, 1, 2)``."""
    return tuple(int(i) for i in np.argsort(perm))


def permuted(call, x, perm):
    """``permute(x)`` unless ``perm`` is the identity."""
    perm = tuple(int(p) for p in perm)
    return x if perm == tuple(range(len(perm))) else call.emit(PERMUTE, [x], {"perm": perm})


def reshaped(call, x, shape):
    """``reshape(x)`` unless the shape is already ``shape``."""
    shape = tuple(int(s) for s in shape)
    return x if x.type.shape == shape else call.emit(RESHAPE, [x], {"shape": shape})


def torch_name(name: str) -> str:
    """The torch-style name of a rearranged Keras kernel: ``dense.kernel`` -> ``dense.weight``."""
    return name[: -len("kernel")] + "weight" if name.endswith("kernel") else name


def arranged(call, i, perm=None, shape=None, fn=None):
    """Operand ``i`` transposed by ``perm``, reshaped to ``shape`` and passed through ``fn`` (NumPy).

    A constant operand (a weight) is rearranged once in NumPy and stored under its torch-style name;
    otherwise permute/reshape nodes are emitted, and ``fn`` (a NumPy-only step such as a kernel
    flip) makes the rule unsupported.
    """
    array = call.const_value(i)
    if array is None:
        if fn is not None:
            call.unsupported("the kernel is computed at run time; only stored kernels are supported here")
        x = call.input(i)
        x = permuted(call, x, perm) if perm is not None else x
        return reshaped(call, x, shape) if shape is not None else x
    out = np.transpose(array, perm) if perm is not None else array
    out = out.reshape(shape) if shape is not None else out  # a view where NumPy can: Note [lazy relayout]
    out = fn(out) if fn is not None else out
    if out is array:
        return call.input(i)
    return call.const(out, torch_name(call.const_name(i)))


def named(rule, name: str):
    """Give a generated rule a descriptive name (``_add_from_jax``) for tracebacks and listings."""
    rule.__name__ = rule.__qualname__ = f"_{name}_from_jax"
    return rule
