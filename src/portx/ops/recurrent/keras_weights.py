"""Re-packing one recurrent cell's weights between torch's and Keras's layouts (Note [keras cell weights]).

Note [keras cell weights]: torch stores ``w_ih (G*H, in)``, ``w_hh (G*H, H)``, ``b_ih``, ``b_hh``; Keras stores
``kernel (in, G*H)``, ``recurrent_kernel (H, G*H)`` and ``bias``. LSTM gates are ``i, f, g, o`` in both.
GRU gates are ``r, z, n`` in torch and ``z, r, h`` in Keras; Keras's ``reset_after=True`` GRU computes torch's
GRU exactly and keeps both biases as a ``(2, 3H)`` bias, so a GRU maps parameter for parameter. LSTM and
SimpleRNN have one Keras bias where torch has two: torch -> Keras uses the emitted ``TorchLSTMCell`` /
``TorchSimpleRNNCell`` (Keras's cell plus ``recurrent_bias``, to_keras.py), so ``b_hh`` stays a trainable weight
of its own and the counts are equal; Keras -> torch puts the bias in ``b_ih`` and leaves ``b_hh`` out (None):
the torch emit writes zeros there and freezes them (``requires_grad_(False)``), so the trainable counts are equal.

Example:
    >>> kernel, recurrent, bias = to_keras_cell("gru", [w_ih, w_hh, b_ih, b_hh])
"""
from __future__ import annotations

import numpy as np

__all__ = ["to_keras_cell", "from_keras_cell"]


def _gru_order(rows: np.ndarray) -> np.ndarray:
    """Swap the first two gate blocks along axis 0 (torch r, z, n <-> Keras z, r, h; its own inverse)."""
    r, z, n = np.split(rows, 3, axis=0)
    return np.concatenate([z, r, n], axis=0)


def to_keras_cell(kind: str, cell, reset_after=True) -> list:
    """Keras ``[kernel, recurrent_kernel(, bias(, recurrent_bias))]`` for torch's ``[w_ih, w_hh(, b_ih, b_hh)]``;
    kind lstm/gru/rnn (a GRU with ``reset_after=False`` and no b_hh: one (3H,) bias)."""
    order = _gru_order if kind == "gru" else (lambda a: a)
    arrays = [np.ascontiguousarray(order(np.asarray(cell[0])).T), np.ascontiguousarray(order(np.asarray(cell[1])).T)]
    if len(cell) == 4:
        b_ih, b_hh = (order(np.asarray(b)) if b is not None else None for b in cell[2:])
        if kind == "gru" and not reset_after and b_hh is None:
            arrays.append(b_ih)
        elif kind == "gru":
            arrays.append(np.stack([b_ih, b_hh if b_hh is not None else np.zeros_like(b_ih)]))
        else:  # b_hh: the torch cell's recurrent_bias
            arrays += [b_ih] if b_hh is None else [b_ih, b_hh]
    return arrays


def from_keras_cell(kind: str, arrays) -> list:
    """torch's ``[w_ih, w_hh(, b_ih, b_hh)]`` for Keras ``[kernel, recurrent_kernel(, bias)]``; b_hh None: zeros."""
    order = _gru_order if kind == "gru" else (lambda a: a)
    cell = [np.ascontiguousarray(order(np.asarray(arrays[0]).T)), np.ascontiguousarray(order(np.asarray(arrays[1]).T))]
    if len(arrays) == 3:
        bias = np.asarray(arrays[2])
        if kind == "gru" and bias.ndim == 2:
            cell += [np.ascontiguousarray(order(bias[0])), np.ascontiguousarray(order(bias[1]))]
        else:  # one bias: LSTM, SimpleRNN, GRU(reset_after=False)
            cell += [np.ascontiguousarray(order(bias)), None]
    return cell
