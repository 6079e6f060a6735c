"""ATen import rules for ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN``: ``aten::lstm`` / ``gru`` / ``rnn_tanh`` / ``rnn_relu``.

``torch.export`` keeps each module call as one ATen op with a flat weight list (Note [recurrent weights]),
and a call without initial states passes folded zeros, which become a missing ``h0``/``c0`` here.
Refused: packed sequences (the ``.data`` overloads) and ``proj_size`` (LSTM with projections).

Example:
    aten::lstm(%x, [%h0, %c0], [%w_ih_l0, %w_hh_l0, %b_ih_l0, %b_hh_l0], True, 1, 0.0, False, False, True)
    -> lstm(%x, _, _, %w_ih_l0, %w_hh_l0, %b_ih_l0, %b_hh_l0) {hidden_size=8, batch_first=True, ...}
"""
from __future__ import annotations

import numpy as np

from ..recurrent import GATES, GRU, LSTM, RNN

__all__ = []


def _initial(call, value):
    """``value``, or None when it is a stored all-zero array (what a call without h0 passes)."""
    array = call.constant(value)
    return None if array is not None and not np.any(array) else value


def _recurrent_from_aten(call, op, states, attrs=None):
    if call.arg("batch_sizes") is not None:
        call.unsupported("packed sequences (nn.utils.rnn.pack_padded_sequence) are not supported; pass padded "
                         "tensors")
    weights = list(call.arg("params"))
    per = 4 if call.arg("has_biases") else 2
    w_hh = weights[1].type.shape if len(weights) > 1 else ()
    if len(weights) % per or len(w_hh) != 2 or w_hh[0] != GATES[op] * w_hh[1]:
        call.unsupported("LSTM with proj_size > 0 is not supported; use proj_size=0 and a Linear after it")
    attrs = {"hidden_size": int(weights[1].type.shape[1]), "num_layers": int(call.arg("num_layers")),
             "bidirectional": bool(call.arg("bidirectional")), "batch_first": bool(call.arg("batch_first")),
             "has_biases": bool(call.arg("has_biases")), "dropout": float(call.arg("dropout", 0.0)), **(attrs or {})}
    return call.emit(op, [call.arg("input"), None] + [_initial(call, s) for s in states] + weights, attrs)


@LSTM.imports("torch", "aten::lstm")
def _lstm_from_aten(call):
    hx = call.arg("hx") or []
    if len(hx) != 2:
        call.unsupported(f"aten::lstm with {len(hx)} state tensors (expected h0 and c0)")
    return _recurrent_from_aten(call, LSTM, hx)


@GRU.imports("torch", "aten::gru")
def _gru_from_aten(call):
    return _recurrent_from_aten(call, GRU, [call.arg("hx")])


@RNN.imports("torch", "aten::rnn_tanh", "aten::rnn_relu")
def _rnn_from_aten(call):
    relu = call.node.target._schema.name == "aten::rnn_relu"
    return _recurrent_from_aten(call, RNN, [call.arg("hx")], {"nonlinearity": "relu" if relu else "tanh"})
