"""torch-xla emit rules for lstm, gru and rnn: one ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` holding the weights.

The IR keeps torch's weight list (Note [recurrent weights]), so the weights are the module's state_dict
entries as they are. A stored weight that does not train in the source (the zero ``b_hh`` a Keras LSTM
import adds, Note [keras cell weights]) is frozen with ``requires_grad_(False)``, so that the trainable
counts match the source. A node with a Keras mask or a GRU with ``reset_after=False`` runs its cell in a loop
over the time steps instead (to_torch_loop.py).

Example generated code:
    self.lstm = nn.LSTM(16, 8, batch_first=True)
    lstm, (lstm_1, lstm_2) = self.lstm(x)
"""
from __future__ import annotations

import numpy as np

from ...errors import Unsupported
from ..recurrent import GRU, LSTM, RNN, layer_weights, mask_input, state_inputs, weight_inputs
from .to_torch_loop import emit_loop

__all__ = []

_CLASSES = {LSTM: "LSTM", GRU: "GRU", RNN: "RNN"}
_NAMES = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _weights(node, t) -> dict:
    """state_dict suffix -> stored Value (None: a missing ``b_hh``), in torch's order (``weight_ih_l0``, ...)."""
    weights = weight_inputs(node)
    if not all(w is None or t.is_param(w) for w in weights):
        raise Unsupported(f"{node.op.name} with computed weights: nn.{_CLASSES[node.op]} owns stored weights")
    dirs = 2 if node.attrs["bidirectional"] else 1
    cells = layer_weights(node.op, list(weights), node.attrs)
    return {f"{_NAMES[j]}_l{i // dirs}{'_reverse' if i % dirs else ''}": w
            for i, cell in enumerate(cells) for j, w in enumerate(cell)}


def _arrays(weights, t) -> dict:
    """The stored arrays, zeros for a missing ``b_hh`` (passing arrays, not Values, names the submodule after
    the node's scope rather than ``weight_ih_l0``)."""
    arrays = {k: t.param(w) for k, w in weights.items() if w is not None}
    return {k: arrays[k] if k in arrays else np.zeros_like(arrays[k.replace("bias_hh", "bias_ih")])
            for k in weights}


def _constructor(node) -> tuple:
    a, x = node.attrs, node.inputs[0]
    kwargs = {"num_layers": a["num_layers"], "bias": a["has_biases"], "batch_first": a["batch_first"],
              "dropout": a["dropout"], "bidirectional": a["bidirectional"]}
    defaults = {"num_layers": 1, "bias": True, "batch_first": False, "dropout": 0.0, "bidirectional": False}
    if node.op is RNN and a["nonlinearity"] != "tanh":
        kwargs["nonlinearity"] = a["nonlinearity"]
    return (int(x.type.shape[2]), int(a["hidden_size"])), {k: v for k, v in kwargs.items() if defaults.get(k) != v}


def _state_arg(node, t) -> str:
    states = [t.ref(s) if s is not None else None for s in state_inputs(node)]
    if all(s is None for s in states):
        return ""
    if node.op is not LSTM:
        return f", {states[0]}"
    anchor = next(s for s in states if s is not None)
    h, c = (s if s is not None else f"torch.zeros_like({anchor})" for s in states)
    return f", ({h}, {c})"


def _recurrent_to_torch(node, t):
    weights = _weights(node, t)
    args, kwargs = _constructor(node)
    module = t.submodule(node, _CLASSES[node.op], args, kwargs, _arrays(weights, t))
    trained = [w is not None and t.graph.is_trainable(w.name) for w in weights.values()]
    for (suffix, w), trains in zip(weights.items(), trained):
        if any(trained) and not trains:  # Note [keras cell weights]: the zero b_hh of a Keras LSTM
            t.init.line(f"{module}.{suffix}.requires_grad_(False)")
    names = t.variables(node, None)
    for value, var in zip(node.outputs, names):
        t.names[value] = var
        t.module_of[value] = module[len("self."):]
    if mask_input(node) is not None or not node.attrs.get("reset_after", True):
        emit_loop(node, t, module, names)
        return
    states = f"({names[1]}, {names[2]})" if node.op is LSTM else names[1]
    t.body.line(f"{names[0]}, {states} = {module}({t.ref(node.inputs[0])}{_state_arg(node, t)})")


for _op in (LSTM, GRU, RNN):
    _op.emits("torch-xla")(_recurrent_to_torch)
