"""Keras import rules for LSTM, GRU, SimpleRNN and Bidirectional -> one IR ``lstm`` / ``gru`` / ``rnn`` node.

Each layer becomes a ``batch_first`` IR node with torch's weights (Note [keras cell weights]);
``return_sequences=False`` reads the last step from ``h_n`` (the same numbers), ``go_backwards`` flips the
input (its output stays in reversed order, as in Keras), ``initial_state`` becomes ``h0``/``c0`` and
``dropout`` an IR dropout on the input with its mask shared over time (what Keras's cell does).
Bidirectional is one bidirectional node; ``merge_mode`` sum/mul/ave/None splits its output. ``RNN`` around
one LSTMCell, GRUCell or SimpleRNNCell converts as that layer (``_CellRNN``), ``RNN(StackedRNNCells)`` as one
node per cell. A Keras mask (Embedding(mask_zero), Masking) is the node's ``mask`` input and
``GRU(reset_after=False)`` its ``reset_after`` attribute (Note [recurrent masks]).
Refused, each with one line naming the layer and the option: other activations, ``recurrent_dropout``,
``stateful`` and masks on a Bidirectional layer. ``unroll`` and ``use_cudnn`` change how Keras runs the
same function, not the function, so they convert.

Example:
    >>> keras.layers.LSTM(8, return_state=True)(x)
    # -> lstm(%x, _, _, _, %lstm.weight_ih_l0, %lstm.weight_hh_l0, %lstm.bias_ih_l0, _) {batch_first=True, ...}
"""
from __future__ import annotations

import copy

import numpy as np

from ...ir import imports
from ..dropout import DROPOUT
from ..elementwise import BINARY, CAST
from ..recurrent import GRU, LSTM, RNN
from ..shape import CONCAT, SPLIT, STACK
from ..shape.index import FLIP, SELECT
from .keras_weights import from_keras_cell

__all__ = []

_OPS = {"LSTM": LSTM, "GRU": GRU, "SimpleRNN": RNN}
_SUFFIX = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _refuse_options(call, layer):
    """Stop on what the IR op cannot express (the layer's class and the option in one line)."""
    cls, cfg = _kind(layer), layer.get_config()
    allowed = ("tanh", "relu") if cls == "SimpleRNN" else ("tanh",)
    problems = []
    if cfg.get("activation") not in allowed:
        problems.append(f"activation={cfg.get('activation')!r} (portx converts {' or '.join(allowed)})")
    if cls != "SimpleRNN" and cfg.get("recurrent_activation") != "sigmoid":
        problems.append(f"recurrent_activation={cfg.get('recurrent_activation')!r} (portx converts 'sigmoid')")
    if cfg.get("recurrent_dropout"):
        problems.append(f"recurrent_dropout={cfg['recurrent_dropout']} (torch's recurrent layers have none; "
                        "set it to 0 or use dropout)")
    if cfg.get("stateful"):
        problems.append("stateful=True (carry states explicitly with initial_state and return_state)")
    if problems:
        call.unsupported(f"{cls} {layer.name}: " + "; ".join(problems))


def _cell(call, layer, kind, reverse, index=0):
    """torch's weights of one Keras cell as IR params (Note [keras cell weights]); LSTM/SimpleRNN: b_hh is None."""
    # The same call, reading ``layer``'s weights by name: both halves of a Bidirectional have a "kernel", and
    # their paths differ only by a prefix that saving drops. A shallow copy shares the call's record of reads.
    view = copy.copy(call)
    view.layer = layer
    arrays = [view.weight(var.name) for var in layer.cell.weights]  # kernel, recurrent_kernel(, bias)
    cell = from_keras_cell(kind, arrays)
    suffix = f"_l{index}" + ("_reverse" if reverse else "")  # one Keras layer (or stacked cell) is one torch layer
    if kind == "gru" and len(arrays) == 3 and arrays[2].ndim == 2 and arrays[2].flags.writeable:
        # b_ih, b_hh as views of the bias read above, so that they count as trainable: that array is this
        # rule's own copy of the variable, re-ordered in place (Note [keras cell weights])
        arrays[2][...] = cell[2], cell[3]
        cell[2:] = [arrays[2][0], arrays[2][1]]
    return [None if a is None else view.param(a, name + suffix) for a, name in zip(cell, _SUFFIX)]


def _initial_states(call, n_states, dirs):
    states = call.arg("initial_state")
    if not states:
        return [None] * n_states
    states = list(states) if isinstance(states, (list, tuple)) else [states]
    return [call.emit(STACK, [states[d * n_states + s] for d in range(dirs)], {"axis": 0}) for s in range(n_states)]


def _run(call, layer, dirs, backward=None, x=None, states=None, index=0):
    """The IR node for ``layer`` (and ``backward`` when bidirectional) on ``x`` (default: the call's input), from
    ``states`` (default: the call's initial_state); its outputs (output, h_n(, c_n))."""
    op, kind = _OPS[_kind(layer)], _kind(layer).lower().replace("simplernn", "rnn")
    x, mask = call.inputs[0] if x is None else x, _mask(call, layer, dirs)
    if layer.go_backwards and dirs == 1:
        x = call.emit(FLIP, [x], {"axes": (1,)})
        mask = None if mask is None else call.emit(FLIP, [mask], {"axes": (1,)})
    if layer.dropout:
        x = call.emit(DROPOUT, [x], {"rate": float(layer.dropout), "axes": (1,)})
    weights = _cell(call, layer, kind, False, index) + (_cell(call, backward, kind, True) if backward else [])
    attrs = {"hidden_size": int(layer.units), "bidirectional": dirs == 2, "batch_first": True,
             "has_biases": bool(layer.use_bias)}
    if op is RNN:
        attrs["nonlinearity"] = layer.get_config()["activation"]
    if op is GRU:
        attrs["reset_after"] = bool(layer.get_config().get("reset_after", True))
    states = _initial_states(call, 2 if op is LSTM else 1, dirs) if states is None else states
    return call.emit(op, [x, mask] + states + weights, attrs)


def _mask(call, layer, dirs):
    """The Keras mask the layer is called with, as a (B, T) bool Value (Note [recurrent masks]), or None."""
    mask = call.arg("mask")
    if not call.passed("mask"):
        return None
    if mask is None or not hasattr(mask, "type") or dirs != 1:
        where = "a Bidirectional layer" if dirs != 1 else "a mask portx did not convert"
        call.unsupported(f"{type(layer).__name__} {layer.name}: Keras mask on {where}; pad and pass "
                         "explicit lengths instead")
    return mask if mask.type.dtype == "bool" else call.emit(CAST, [mask], {"dtype": "bool"})


def _last(call, h_n, direction):
    return call.emit(SELECT, [h_n], {"axis": 0, "index": direction})


def _kind(layer) -> str:
    """"LSTM", "GRU" or "SimpleRNN": the layer's class, or the class an ``RNN(cell)`` stands for."""
    return getattr(layer, "stands_for", type(layer).__name__)


class _CellRNN:
    """``keras.layers.RNN`` around one LSTMCell / GRUCell / SimpleRNNCell (``cell``: one of its StackedRNNCells,
    whose weights it holds; ``first``: the one that reads the input), seen as the matching layer: the cell's
    options (units, activation, dropout, ...) and the RNN's (go_backwards, return_sequences, ...)."""

    CELLS = {"LSTMCell": "LSTM", "GRUCell": "GRU", "SimpleRNNCell": "SimpleRNN"}

    def __init__(self, rnn, cell=None, first=True):
        self.rnn, self.cell = rnn, rnn.cell if cell is None else cell
        self.stands_for = self.CELLS[type(self.cell).__name__]
        self.name, self.trainable = rnn.name, rnn.trainable
        self.weights = rnn.weights if cell is None else cell.weights
        self.units, self.use_bias, self.dropout = self.cell.units, self.cell.use_bias, self.cell.dropout
        self.go_backwards, self.return_sequences = rnn.go_backwards and first, rnn.return_sequences
        self.return_state = rnn.return_state

    def get_config(self) -> dict:
        return {**self.cell.get_config(), **{k: v for k, v in self.rnn.get_config().items() if k != "cell"}}


@LSTM.imports("keras", "LSTM")
@GRU.imports("keras", "GRU")
@RNN.imports("keras", "SimpleRNN")
@RNN.imports("keras", "RNN")
def _recurrent_from_keras(call):
    layer = call.layer
    if type(layer).__name__ == "RNN" and type(layer.cell).__name__ == "StackedRNNCells":
        return _stacked(call, layer)
    if type(layer).__name__ == "RNN":
        if type(layer.cell).__name__ not in _CellRNN.CELLS:
            call.unsupported(f"RNN {layer.name}: cell {type(layer.cell).__name__} (portx converts one LSTMCell, "
                             "GRUCell or SimpleRNNCell; use the LSTM / GRU / SimpleRNN layers)")
        layer = call.layer = _CellRNN(layer)
    _refuse_options(call, layer)
    outs = _run(call, layer, 1)
    y = outs[0] if layer.return_sequences else _last(call, outs[1], 0)
    states = [_last(call, s, 0) for s in outs[1:]] if layer.return_state else []
    return [y] + states if states else y


def _stacked(call, rnn):
    """``RNN(StackedRNNCells([...]))``: one recurrent node per cell, each reading the previous one's sequence
    (what the stacked cell computes step by step); its states are the cells' states in order, as Keras's."""
    cells = rnn.cell.cells
    other = [type(c).__name__ for c in cells if type(c).__name__ not in _CellRNN.CELLS]
    if other:
        call.unsupported(f"RNN {rnn.name}: StackedRNNCells holds {', '.join(other)} (portx converts LSTMCell, "
                         "GRUCell and SimpleRNNCell)")
    if rnn.go_backwards and call.node.arguments.kwargs.get("mask") is not None:  # each node would flip it again
        call.unsupported(f"RNN {rnn.name}: StackedRNNCells with go_backwards=True and a Keras mask; flip the "
                         "input (and mask) before the layer instead")
    layers = [_CellRNN(rnn, cell, first=i == 0) for i, cell in enumerate(cells)]
    for layer in layers:
        _refuse_options(call, layer)
    given = _initial_states(call, sum(2 if c.stands_for == "LSTM" else 1 for c in layers), 1)
    x, finals = call.inputs[0], []
    for i, layer in enumerate(layers):
        n = 2 if layer.stands_for == "LSTM" else 1
        outs = _run(call, layer, 1, x=x, states=given[:n], index=i)
        given, x = given[n:], outs[0]
        finals += [_last(call, s, 0) for s in outs[1:]]
    y = x if rnn.return_sequences else finals[-1 if layers[-1].stands_for != "LSTM" else -2]
    return [y] + finals if rnn.return_state else y


def _merge(call, mode, forward, backward):
    if mode == "concat":
        return [call.emit(CONCAT, [forward, backward], {"axis": forward.type.rank - 1})]
    if mode is None:
        return [forward, backward]
    op = BINARY["mul" if mode == "mul" else "add"]
    y = call.emit(op, [forward, backward])
    return [y if mode != "ave" else call.emit(BINARY["mul"], [y, call.const(_half(y), "half")])]


def _half(value):
    return np.asarray(0.5, dtype=value.type.dtype)


def _check_pair(call, layer):
    forward, backward = layer.forward_layer, layer.backward_layer
    if type(forward).__name__ not in _OPS or type(backward) is not type(forward):
        call.unsupported(f"Bidirectional {layer.name}: wraps {type(forward).__name__} and "
                         f"{type(backward).__name__} (portx converts LSTM, GRU or SimpleRNN in both directions)")
    _refuse_options(call, forward)
    _refuse_options(call, backward)
    keys = ("units", "use_bias", "activation", "dropout", "return_sequences", "return_state")
    differ = [k for k in keys if forward.get_config().get(k) != backward.get_config().get(k)]
    if differ or forward.go_backwards or not backward.go_backwards:
        call.unsupported(f"Bidirectional {layer.name}: the backward layer differs from the forward one "
                         f"({', '.join(differ) or 'go_backwards'}); torch's bidirectional layers are one config")


@imports("keras", "Bidirectional")
def _bidirectional_from_keras(call):
    """Bidirectional(LSTM/GRU/SimpleRNN) -> one bidirectional node; merge_mode concat is its output as it is."""
    layer = call.layer
    _check_pair(call, layer)
    forward, mode = layer.forward_layer, layer.merge_mode
    outs = _run(call, forward, 2, layer.backward_layer)
    if forward.return_sequences and mode == "concat":
        merged = [outs[0]]
    elif forward.return_sequences:
        units = int(forward.units)
        merged = _merge(call, mode, *call.emit(SPLIT, [outs[0]], {"sizes": (units, units), "axis": 2}))
    else:
        merged = _merge(call, mode, _last(call, outs[1], 0), _last(call, outs[1], 1))
    states = [_last(call, s, d) for d in (0, 1) for s in outs[1:]] if forward.return_state else []
    result = merged + states
    return result if len(result) > 1 else result[0]
