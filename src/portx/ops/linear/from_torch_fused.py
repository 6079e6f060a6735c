"""Torch import rules for fused products: ``aten::_trilinear`` (F.bilinear) and the chunked linear + cross-entropy
ops of ``F.linear_cross_entropy`` (``torch_nn::_linear_cross_entropy_batch_chunked[_no_reduction]``).

``_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim)`` is an einsum: each input is the full-rank
tensor with its ``expand`` axes missing, and the product is summed over ``sumdim``. It becomes two
two-operand einsums (Note [einsum as matmul] in from_keras_ops.py), i1 with i2, then with i3.

The chunked cross-entropy only splits the batch to save memory; its value is the plain one:
``logits = linear(input, linear_weight, linear_bias)`` and per row ``w[t] * -log_softmax(logits)[t]``, where
``w`` is the class weight (or 1) and 0 for rows whose target is ``ignore_index``; ``mean`` divides the sum by
the sum of those weights. The gradients torch precomputes in the same op are never read at inference.

Example:
    aten::_trilinear(%x1, %w, %x2, [1, 3], [0], [1, 2], [2, 3])   # F.bilinear: einsum("bi,oij,bj->bo")
        -> matmul and sum nodes
"""
from __future__ import annotations

import string

import numpy as np

from ...ir import imports
from ..elementwise import BINARY, CAST, WHERE
from ..elementwise.unary import UNARY
from ..linear import LINEAR
from ..linear.from_keras_ops import emit_einsum
from ..reduce import LOG_SOFTMAX, REDUCE
from ..shape.from_keras_ops import reshape_to
from ..shape.index import GATHER, INDEX_SELECT

__all__ = []


@imports("torch", "aten::_trilinear")
def _trilinear_from_aten(call):
    """sum over ``sumdim`` of i1 * i2 * i3, each unsqueezed at its ``expand`` axes, as two einsums."""
    inputs = [call.arg(n) for n in ("i1", "i2", "i3")]
    expands = [set(int(d) for d in call.arg(n)) for n in ("expand1", "expand2", "expand3")]
    rank = inputs[0].type.rank + len(expands[0])
    if rank > len(string.ascii_letters):
        call.unsupported(f"_trilinear of rank {rank}")
    letters = string.ascii_letters[:rank]
    terms = ["".join(c for d, c in enumerate(letters) if d not in e) for e in expands]
    sizes = {}
    for x, term in zip(inputs, terms):
        for c, n in zip(term, x.type.shape):
            if sizes.setdefault(c, int(n)) != int(n):
                call.unsupported("_trilinear of inputs whose shared axes differ in size (broadcasting)")
    a, b, c = inputs
    summed = {letters[int(d)] for d in call.arg("sumdim")}
    out = "".join(ch for ch in letters if ch not in summed and any(ch in t for t in terms))
    middle = "".join(ch for ch in letters if ch in terms[0] + terms[1] and ch in terms[2] + out)
    y = emit_einsum(call, f"{terms[0]},{terms[1]}->{middle}", a, b)
    y = emit_einsum(call, f"{middle},{terms[2]}->{out}", y, c)
    return reshape_to(call, y, call.out_type().shape)


def _row_weights(call, target, weight, ignore_index, dtype):
    """(safe target, per-row weight): ``weight[target]`` (or 1), 0 where the target is ``ignore_index``."""
    ignored = call.emit(BINARY["eq"], [target, call.const(np.array(ignore_index, np.int64), "ignore_index")])
    safe = call.emit(WHERE, [ignored, call.const(np.array(0, np.int64), "zero"), target])
    kept = call.emit(CAST, [call.emit(UNARY["logical_not"], [ignored])], {"dtype": dtype})
    if weight is None:
        return safe, kept
    return safe, call.emit(BINARY["mul"], [call.emit(INDEX_SELECT, [weight, safe], {"axis": 0}), kept])


@imports("torch", "torch_nn::_linear_cross_entropy_batch_chunked",
         "torch_nn::_linear_cross_entropy_batch_chunked_no_reduction")
def _linear_cross_entropy_from_torch(call):
    """The loss (output 0); the precomputed gradients (outputs 1-3 of the reducing op) stay unsupported."""
    x, target = call.arg("input"), call.arg("target")
    reduction = call.arg("reduction", "none")
    if float(call.arg("label_smoothing", 0.0)):
        call.unsupported("linear_cross_entropy with label smoothing")
    if x.type.rank != 2 or target.type.rank != 1:
        call.unsupported("linear_cross_entropy needs an (N, F) input and (N,) targets")
    logits = call.emit(LINEAR, [x, call.arg("linear_weight"), call.arg("linear_bias")])
    log_probs = call.emit(LOG_SOFTMAX, [logits], {"axis": 1})
    safe, weights = _row_weights(call, target, call.arg("weight"), int(call.arg("ignore_index", -100)),
                                 log_probs.type.dtype)
    n = target.type.shape[0]
    picked = reshape_to(call, call.emit(GATHER, [log_probs, reshape_to(call, safe, (n, 1))], {"axis": 1}), (n,))
    losses = call.emit(BINARY["mul"], [call.emit(UNARY["neg"], [picked]), weights])
    if reduction == "none":
        return losses
    loss = call.emit(REDUCE["sum"], [losses], {"axes": (0,), "keepdims": False})
    if reduction == "mean":
        total = call.emit(REDUCE["sum"], [weights], {"axes": (0,), "keepdims": False})
        loss = call.emit(BINARY["div"], [loss, total])
    return [loss, None, None, None]
