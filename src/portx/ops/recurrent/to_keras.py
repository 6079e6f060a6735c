"""Keras-JAX emit rules for lstm, gru and rnn: one recurrent layer per stacked layer, wrapped in
``layers.Bidirectional`` for two directions, never unrolled per time step (each runs as one ``lax.scan``).

A GRU is ``layers.GRU`` (Keras's ``reset_after=True`` GRU is torch's). An LSTM or RNN with torch's two biases is
``layers.RNN`` of ``TorchLSTMCell`` / ``TorchSimpleRNNCell``, written into model.py: Keras's cell plus
``recurrent_bias`` (torch's ``b_hh``), so every torch parameter stays a trainable weight of its own and the
counts are equal (Note [keras cell weights]); without biases (or one, from a Keras source) it is ``layers.LSTM`` /
``layers.SimpleRNN``. Each layer returns its sequence (``return_sequences=True``) where a later layer or a reader
needs it, and its final states (``return_state=True``) where ``h_n`` / ``c_n`` are read (a ``mask`` input is the
call's ``mask=``, ``reset_after=False`` the GRU's own option, Note [recurrent masks]): those are the states
stacked (layer by layer, forward then backward). A (T, B, C) input (``batch_first=False``) is transposed to
Keras's (B, T, C) and back.

Example generated code:
    lstm_last, lstm_h, lstm_c = layers.RNN(TorchLSTMCell(8), return_state=True, name='lstm')(x)
    lstm_1 = ops.stack([lstm_h], axis=0)
"""
from __future__ import annotations

from ...errors import Unsupported
from ..recurrent import GRU, LSTM, RNN, layer_weights, mask_input, state_inputs, weight_inputs
from .keras_weights import to_keras_cell

__all__ = []

_CLASSES = {LSTM: "LSTM", GRU: "GRU", RNN: "SimpleRNN"}

_TORCH_CELL = '''
@keras.saving.register_keras_serializable(package="converted")
class Torch{kind}Cell(layers.{kind}Cell):
    """Keras's {kind}Cell plus torch's second bias (b_hh) as a weight: nn.{torch}'s parameters."""

    def build(self, input_shape):
        super().build(input_shape)
        self.recurrent_bias = self.add_weight(shape=self.bias.shape, initializer="zeros", name="recurrent_bias")

    def call(self, inputs, states, training=False):
{body}
'''
_BODIES = {
    LSTM: """        h, c = states
        z = ops.matmul(inputs, self.kernel) + ops.matmul(h, self.recurrent_kernel)
        z = z + self.bias + self.recurrent_bias
        i, f, g, o = ops.split(z, 4, axis=-1)
        c = self.recurrent_activation(f) * c + self.recurrent_activation(i) * self.activation(g)
        h = self.recurrent_activation(o) * self.activation(c)
        return h, [h, c]""",
    RNN: """        h = states[0] if isinstance(states, (list, tuple)) else states
        h = self.activation(ops.matmul(inputs, self.kernel) + ops.matmul(h, self.recurrent_kernel) + self.bias
                            + self.recurrent_bias)
        return h, [h] if isinstance(states, (list, tuple)) else h""",
}


def _cells(node, k) -> list:
    weights = weight_inputs(node)
    if not all(w is None or k.is_param(w) for w in weights):
        raise Unsupported(f"{node.op.name} with computed weights: Keras recurrent layers own stored weights")
    arrays = layer_weights(node.op, [None if w is None else k.param(w) for w in weights], node.attrs)
    return [to_keras_cell(node.op.name, cell, node.attrs.get("reset_after", True)) for cell in arrays]


def _used(k, value) -> bool:
    return value in k.graph.outputs or any(value in n.inputs for n in k.graph.nodes)


def _layer_text(node, k, name, sequences, state, two_biases) -> str:
    a = node.attrs
    cell = [str(int(a["hidden_size"]))] + ["use_bias=False"] * (not a["has_biases"]) + \
        ["activation='relu'"] * (a.get("nonlinearity") == "relu") + \
        ["reset_after=False"] * (not a.get("reset_after", True))
    outputs = ["return_sequences=True"] * sequences + ["return_state=True"] * state
    if two_biases:  # Note [keras cell weights]
        kind = _CLASSES[node.op]
        cls = k.define(f"Torch{kind}Cell", _TORCH_CELL.format(kind=kind, torch=node.op.name.upper(),
                                                                 body=_BODIES[node.op]))
        inner = f"layers.RNN({cls}({', '.join(cell)}), {', '.join(outputs)}" if outputs else \
            f"layers.RNN({cls}({', '.join(cell)})"
    else:
        inner = f"layers.{_CLASSES[node.op]}({', '.join(cell + outputs)}"
    if a["bidirectional"]:
        return f"layers.Bidirectional({inner}), name={k.lit(name)})"
    return f"{inner}, name={k.lit(name)})"


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
        two = node.op is not GRU and len(cells[index * dirs]) == 4
        mask = f", mask={k.ref(mask_input(node))}" if mask_input(node) is not None else ""
        k.body.line(f"{', '.join([out] + states)} = {_layer_text(node, k, name, sequences, state, two)}({seq}"
                    f"{_initial_state(node, k, index, dirs)}{mask})")
        k.weights[name] = [w for d in range(dirs) for w in cells[index * dirs + d]]
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
