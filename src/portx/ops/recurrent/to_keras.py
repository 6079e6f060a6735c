"""Keras-JAX emit rules for lstm, gru and rnn: one ``layers.LSTM`` / ``GRU`` / ``SimpleRNN`` per stacked layer,
wrapped in ``layers.Bidirectional`` for two directions, never unrolled per time step.

Each layer returns its sequence (``return_sequences=True``) where a later layer or a reader needs it, and
its final states (``return_state=True``) where ``h_n`` / ``c_n`` are read: those are the states stacked
(layer by layer, forward then backward). Weights are re-packed per
Note [keras cell weights]: an LSTM or SimpleRNN stores ``b_ih + b_hh`` as its one bias. A (T, B, C) input
(``batch_first=False``) is transposed to Keras's (B, T, C) and back.

Example generated code:
    # bias = torch's b_ih + b_hh: 32 fewer trainable numbers per direction
    lstm_last, lstm_h, lstm_c = layers.LSTM(8, return_state=True, name='lstm')(x)
    lstm_1 = ops.stack([lstm_h], axis=0)
"""
from __future__ import annotations

from ...errors import Unsupported
from ..recurrent import GATES, GRU, LSTM, RNN, layer_weights, state_inputs, weight_inputs
from .keras_weights import to_keras_cell

__all__ = []

_CLASSES = {LSTM: "LSTM", GRU: "GRU", RNN: "SimpleRNN"}


def _cells(node, k) -> list:
    weights = weight_inputs(node)
    if not all(w is None or k.is_param(w) for w in weights):
        raise Unsupported(f"{node.op.name} with computed weights: Keras recurrent layers own stored weights")
    arrays = layer_weights(node.op, [None if w is None else k.param(w) for w in weights], node.attrs)
    return [to_keras_cell(node.op.name, cell) for cell in arrays]


def _used(k, value) -> bool:
    return value in k.graph.outputs or any(value in n.inputs for n in k.graph.nodes)


def _layer_text(node, k, name, sequences, state) -> str:
    a = node.attrs
    args = [str(int(a["hidden_size"]))] + ["return_sequences=True"] * sequences + ["return_state=True"] * state
    if not a["has_biases"]:
        args.append("use_bias=False")
    if a.get("nonlinearity") == "relu":
        args.append("activation='relu'")
    inner = f"layers.{_CLASSES[node.op]}({', '.join(args)}"
    if a["bidirectional"]:
        return f"layers.Bidirectional({inner}), name={k.lit(name)})"
    return f"{inner}, name={k.lit(name)})"


def _comment(node) -> str:
    """The generated line's note on the weights (Note [keras cell weights])."""
    if node.op is GRU or not node.attrs["has_biases"]:
        return "reset_after=True (Keras's default) is torch's GRU: both biases kept" if node.op is GRU else ""
    width = GATES[node.op] * node.attrs["hidden_size"]
    return f"bias = torch's b_ih + b_hh: {width} fewer trainable numbers per direction"


def _initial_state(node, k, index, dirs) -> str:
    """``, initial_state=[...]`` for stacked layer ``index`` (forward states, then backward), or ''."""
    given = [k.ref(s) if s is not None else None for s in state_inputs(node)]
    if all(s is None for s in given):
        return ""
    anchor = next(s for s in given if s is not None)
    rows = [f"{s}[{index * dirs + d}]" if s is not None else f"ops.zeros_like({anchor}[{index * dirs + d}])"
            for d in range(dirs) for s in given]
    return f", initial_state=[{', '.join(rows)}]"


def _recurrent_to_keras(node, k):
    a, cells = node.attrs, _cells(node, k)
    dirs, n_states = (2 if a["bidirectional"] else 1), len(node.outputs) - 1
    names, used = k.variables(node, None), [_used(k, v) for v in node.outputs]
    seq = k.ref(node.inputs[0])
    if not a["batch_first"]:
        seq = k.temp(node, f"ops.transpose({seq}, (1, 0, 2))", "batch_first")
    base, finals, state = k.var_names.raw(node), [], any(used[1:])
    for index in range(a["num_layers"]):
        if index and a["dropout"]:
            seq = k.sublayer(node, "Dropout", {"rate": a["dropout"]}, [seq], hint=f"dropout_{index}")
        name = k.layer_ident(base if a["num_layers"] == 1 else f"{base}_l{index}", node.op.name)
        last = index == a["num_layers"] - 1
        sequences = not last or used[0] or not state
        out = names[0] if last and a["batch_first"] else k.ns.name(f"{name}_{'seq' if sequences else 'last'}", "seq")
        states = [k.ns.name(f"{name}_{'hc'[s]}{'_b' if d else ''}", "state")
                  for d in range(dirs) for s in range(n_states)] if state else []
        k.body.line(f"{', '.join([out] + states)} = {_layer_text(node, k, name, sequences, state)}({seq}"
                    f"{_initial_state(node, k, index, dirs)})", comment=_comment(node))
        k.weights[name] = [w for d in range(dirs) for w in cells[index * dirs + d]]
        if _comment(node).startswith("bias"):
            k.merge_note(node, dirs * GATES[node.op] * a["hidden_size"], "torch's b_ih + b_hh held as one Keras bias")
        finals.append(states)
        seq = out
    k.layer_of[node.outputs[0]] = name
    if used[0] and not a["batch_first"]:
        k.body.line(f"{names[0]} = ops.transpose({seq}, (1, 0, 2))")
    k.names[node.outputs[0]] = names[0]
    for s, value in enumerate(node.outputs[1:]):
        if used[s + 1]:
            parts = [layer[d * n_states + s] for layer in finals for d in range(dirs)]
            k.body.line(f"{names[s + 1]} = ops.stack([{', '.join(parts)}], axis=0)")
            k.names[value] = names[s + 1]


for _op in (LSTM, GRU, RNN):
    _op.emits("keras-jax")(_recurrent_to_keras)
