"""Keras-JAX emit rule for attention: one ``ops.dot_product_attention`` call where it applies, else
``keras.ops`` steps.

Note [fused attention]: ``ops.dot_product_attention`` (``jax.nn.dot_product_attention`` on JAX, which
picks a fused TPU kernel where it can) takes ``(B, T, N, H)`` operands where the IR has torch's
``(B, N, T, H)``, so the rule swaps axes 1 and 2 on the way in and out (XLA folds both swaps into the
attention's dot products). A bool mask goes in as ``mask``, a float mask as ``bias``, grouped-query
heads as they are. Two differences are patched after the call: where a bool mask hides every key of a
row, JAX averages all values and torch gives zeros (Note [fully masked rows] in __init__.py), so such
rows are zeroed; and a float mask whose row is all ``-inf`` gives NaN in JAX, zeroed the same way.
The fused form is used for rank-4 float operands of one depth (JAX requires the values' depth to
equal the keys') without attention dropout; otherwise (other ranks and depths, ``dropout_p > 0``) the rule writes the steps out, with the softmax as a named ``Softmax`` layer
(``<scope>_probs``) and the dropout as a ``Dropout`` layer on it, active only in training.

With a ``layout`` (Note [attention layout] in __init__.py) the operands are transposed from the order
they are stored in to ``(B, T, N, H)``: none for Keras' own order (0, 2, 1, 3); XLA folds any other into
the dot products' dimension numbers. The steps read them back in torch's order and store the result in
the layout the same way.

Example generated code:
    attn = ops.swapaxes(ops.dot_product_attention(ops.swapaxes(q, 1, 2), ops.swapaxes(k, 1, 2),
                                                  ops.swapaxes(v, 1, 2), scale=0.25, is_causal=True), 1, 2)
"""
from __future__ import annotations

from ..attention import ATTENTION, inverse_perm

__all__ = []


def _mask_of(node):
    return node.inputs[3] if len(node.inputs) > 3 else None


def _hidden_rows(k, node, mask) -> str:
    """An expression True for the query rows ``mask`` hides entirely (keepdims over the keys)."""
    if mask.type.dtype == "bool":
        return f"ops.logical_not(ops.any({k.ref(mask)}, axis=-1, keepdims=True))"
    return f"ops.all(ops.equal({k.ref(mask)}, float('-inf')), axis=-1, keepdims=True)"


def _fused(node, k):
    """Note [fused attention]."""
    q, key, value = node.inputs[:3]
    mask, a = _mask_of(node), node.attrs
    layout = a.get("layout")
    into = (0, 2, 1, 3) if layout is None else tuple(inverse_perm(layout)[j] for j in (0, 2, 1, 3))
    back = (0, 2, 1, 3) if layout is None else tuple((0, 2, 1, 3)[i] for i in layout)
    args = [_transposed(k.ref(v), into) for v in (q, key, value)]
    if mask is not None:
        args.append(f"{'mask' if mask.type.dtype == 'bool' else 'bias'}={k.ref(mask)}")
    args.append(f"scale={k.lit(float(a['scale']))}")
    if a["is_causal"]:
        args.append("is_causal=True")
    out = f"ops.dot_product_attention({', '.join(args)})"
    if mask is None:
        k.assign(node, _transposed(out, back))
        return
    out = k.temp(node, f"ops.swapaxes({out}, 1, 2)", "context")
    out = f"ops.where({_hidden_rows(k, node, mask)}, 0.0, {out})"
    k.assign(node, out if layout is None else _transposed(out, tuple(layout)))


def _transposed(expr, perm) -> str:
    """``expr`` in the axis order ``perm`` (a swap of two axes as ``ops.swapaxes``; none for the identity)."""
    moved = [i for i, p in enumerate(perm) if p != i]
    if not moved:
        return expr
    if len(moved) == 2:
        return f"ops.swapaxes({expr}, {moved[0]}, {moved[1]})"
    return f"ops.transpose({expr}, {tuple(perm)})"


def _masked_scores(node, k, scores, size):
    """Apply the causal and explicit masks to the ``size`` (queries, keys) ``scores``; returns the new expression."""
    mask = _mask_of(node)
    if node.attrs["is_causal"]:
        scores = k.temp(node, f"ops.where(ops.tril(ops.ones({k.lit(size)}, dtype='bool')), {scores}, "
                              f"float('-inf'))", "causal_scores")
    if mask is not None:
        expr = (f"ops.where({k.ref(mask)}, {scores}, float('-inf'))" if mask.type.dtype == "bool"
                else f"ops.add({scores}, {k.ref(mask)})")
        scores = k.temp(node, expr, "masked_scores")
    return scores


def _stepwise(node, k):
    q, key, value = node.inputs[:3]
    a = node.attrs
    layout = a.get("layout")
    back = None if layout is None else inverse_perm(layout)
    shape_q, shape_k = (v.type.shape if back is None else tuple(v.type.shape[i] for i in back) for v in (q, key))

    def logical(v, hint):  # Note [attention layout]: the operand in torch's order
        return k.ref(v) if back is None else k.temp(node, _transposed(k.ref(v), back), hint)

    queries, keys, values = logical(q, "queries"), logical(key, "keys"), logical(value, "values")
    if q.type.rank > 2 and shape_q[-3] != shape_k[-3]:  # grouped-query: share each kv head
        repeat = shape_q[-3] // shape_k[-3]
        keys = k.temp(node, f"ops.repeat({keys}, {repeat}, axis=-3)", "keys")
        values = k.temp(node, f"ops.repeat({values}, {repeat}, axis=-3)", "values")
    scores = f"ops.matmul({queries}, ops.swapaxes({keys}, -1, -2))"
    scores = k.temp(node, scores if a["scale"] == 1.0 else f"ops.multiply({scores}, {k.lit(float(a['scale']))})",
                    "scores")
    masked = _masked_scores(node, k, scores, (shape_q[-2], shape_k[-2]))
    layers = all(v in k.live and v.type.dtype == "float32" for v in (q, key, value))
    if layers:
        weights = k.sublayer(node, "Softmax", {"axis": -1}, [masked], hint="probs")
    else:
        weights = k.temp(node, f"ops.softmax({masked})", "probs")
    if _mask_of(node) is not None:  # Note [fully masked rows]
        weights = k.temp(node, f"ops.where(ops.all(ops.equal({masked}, float('-inf')), axis=-1, keepdims=True), "
                               f"0.0, {weights})", "probs")
    if a.get("dropout_p") and layers:
        weights = k.sublayer(node, "Dropout", {"rate": float(a["dropout_p"])}, [weights], hint="probs_dropout")
    out = f"ops.matmul({weights}, {values})"
    k.assign(node, out if layout is None else _transposed(out, tuple(layout)))


@ATTENTION.emits("keras-jax")
def _attention_to_keras(node, k):
    q, key, value = node.inputs[:3]
    fused = (all(v.type.rank == 4 and v.type.dtype in ("float32", "bfloat16", "float16") for v in (q, key, value))
             and q.type.shape[-1] == value.type.shape[-1] and not node.attrs.get("dropout_p"))
    (_fused if fused else _stepwise)(node, k)
