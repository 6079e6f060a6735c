"""Recurrent layers with torch's semantics: ``lstm``, ``gru`` and ``rnn`` (tanh or relu), one node per call.

Note [recurrent weights]: the weights are torch's flat list, layer by layer and, within a layer, forward
then reverse: ``w_ih (G*H, in), w_hh (G*H, H)`` and, with ``has_biases``, ``b_ih (G*H,), b_hh (G*H,)``.
The gates keep torch's order (LSTM ``i, f, g, o``; GRU ``r, z, n``, with ``n = tanh(W_in x + b_in +
r * (W_hn h + b_hn))``). Outputs are torch's too: ``output`` ((T, B, D*H), or (B, T, D*H) with
``batch_first``), then ``h_n`` (and for LSTM ``c_n``) of shape (L*D, B, H). A missing ``h0``/``c0`` is zeros,
and so is a missing ``b_hh`` (``_``: a Keras LSTM or SimpleRNN has one bias, Note [keras cell weights]).
``dropout`` is torch's dropout between stacked layers, applied in training only.

Note [recurrent masks]: an optional ``mask`` (B, T) bool (Keras's mask, ``batch_first`` order) keeps the state
at a masked step (``state = where(mask_t, new, state)``) and repeats the previous output there (zeros before the
first unmasked step): Keras's RNN with ``zero_output_for_mask=False``. ``gru`` with ``reset_after=False`` is
Keras's other GRU: ``n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)``.

This module declares the OpDefs with their shape rules and NumPy references; the rules for each source
and target are beside it (``from_torch.py``, ``to_keras.py``, ``from_keras.py``, ``to_torch.py``).

Example IR:
    %out: float32[2x7x8], %h: float32[1x2x8], %c: float32[1x2x8] = lstm(%x, _, _, _, %w_ih, %w_hh, %b_ih, %b_hh)
        {hidden_size=8, num_layers=1, bidirectional=False, batch_first=True, has_biases=True, dropout=0.0}
"""
from __future__ import annotations

import numpy as np

from ...ir import REQUIRED, OpDef
from .._util import named_rule

__all__ = ["LSTM", "GRU", "RNN", "RECURRENT", "GATES", "layer_weights", "state_inputs", "weight_inputs",
           "mask_input"]

_ATTRS = {"hidden_size": REQUIRED, "num_layers": 1, "bidirectional": False, "batch_first": False,
          "has_biases": True, "dropout": 0.0}
_DOC = "torch's {} over a sequence (Note [recurrent weights]); outputs output, h_n{}."

LSTM = OpDef("lstm", ("x", "mask?", "h0?", "c0?", "*weights"), _ATTRS, outputs=3, family="recurrent",
             doc=_DOC.format("nn.LSTM", ", c_n"))
GRU = OpDef("gru", ("x", "mask?", "h0?", "*weights"), {**_ATTRS, "reset_after": True}, outputs=2,
            family="recurrent", doc=_DOC.format("nn.GRU", ""))
RNN = OpDef("rnn", ("x", "mask?", "h0?", "*weights"), {**_ATTRS, "nonlinearity": "tanh"}, outputs=2,
            family="recurrent", doc=_DOC.format("nn.RNN (tanh or relu)", ""))
RECURRENT = (LSTM, GRU, RNN)
#: gates per op: rows of w_ih are G * hidden_size
GATES = {LSTM: 4, GRU: 3, RNN: 1}


def _states(op) -> int:
    return 2 if op is LSTM else 1


def mask_input(node):
    """A recurrent node's (B, T) bool mask (Note [recurrent masks]), or None."""
    return node.inputs[1] if len(node.inputs) > 1 else None


def state_inputs(node) -> list:
    """A recurrent node's initial-state inputs (None where absent): ``[h0, c0]`` for lstm, ``[h0]`` otherwise."""
    return list(node.inputs[2:2 + _states(node.op)])


def weight_inputs(node) -> list:
    """A recurrent node's flat weight inputs (Note [recurrent weights])."""
    return list(node.inputs[2 + _states(node.op):])


def layer_weights(op, weights, attrs) -> list:
    """The flat weight list grouped per (layer, direction): ``[[w_ih, w_hh, b_ih, b_hh], ...]`` (no biases: two)."""
    per = 4 if attrs["has_biases"] else 2
    dirs = 2 if attrs["bidirectional"] else 1
    if len(weights) != per * dirs * attrs["num_layers"]:
        raise ValueError(f"{op.name}: {len(weights)} weights, expected {per * dirs * attrs['num_layers']} "
                         f"({attrs['num_layers']} layers, {dirs} directions, {per} per cell)")
    return [list(weights[i:i + per]) for i in range(0, len(weights), per)]


def _recurrent_type(op, x, mask, states, weights, attrs):
    if x.rank != 3:
        raise ValueError(f"{op.name}: input must be (T, B, C) or (B, T, C), got {x.shape}")
    if mask is not None and (mask.shape != x.shape[:2] or not attrs["batch_first"] or attrs["bidirectional"]
                             or attrs["num_layers"] != 1):
        raise ValueError(f"{op.name}: mask {mask.shape} needs one batch_first direction and layer, shape "
                         f"{x.shape[:2]}")
    hidden, dirs = attrs["hidden_size"], 2 if attrs["bidirectional"] else 1
    batch = x.shape[0] if attrs["batch_first"] else x.shape[1]
    cells = layer_weights(op, weights, attrs)
    for i, cell in enumerate(cells):
        width = x.shape[2] if i < dirs else dirs * hidden
        if cell[0].shape != (GATES[op] * hidden, width) or cell[1].shape != (GATES[op] * hidden, hidden):
            raise ValueError(f"{op.name}: cell {i} weights {cell[0].shape}, {cell[1].shape} do not match "
                             f"hidden_size {hidden} and input width {width}")
    state = x.with_shape((attrs["num_layers"] * dirs, batch, hidden))
    for s in states:
        if s is not None and s.shape != state.shape:
            raise ValueError(f"{op.name}: initial state {s.shape}, expected {state.shape}")
    return [x.with_shape(x.shape[:2] + (dirs * hidden,))] + [state] * _states(op)


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _cell_step(op, x_t, state, cell, nonlinearity, reset_after=True):
    """One time step of one cell in float64: the new (h,) or (h, c)."""
    w_ih, w_hh = cell[0], cell[1]
    b_ih, b_hh = (cell[2], 0.0 if cell[3] is None else cell[3]) if len(cell) == 4 else (0.0, 0.0)
    gi, gh = x_t @ w_ih.T + b_ih, state[0] @ w_hh.T + b_hh
    if op is LSTM:
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = _sigmoid(f) * state[1] + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    if op is GRU:
        (ir, iz, in_), (hr, hz, hn) = np.split(gi, 3, axis=-1), np.split(gh, 3, axis=-1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        if not reset_after:  # W_hn (r * h) + b_hn
            hn = (r * state[0]) @ np.split(w_hh, 3, axis=0)[2].T + np.split(np.broadcast_to(b_hh, gh.shape[-1:]), 3)[2]
        n = np.tanh(in_ + r * hn if reset_after else in_ + hn)
        return ((1.0 - z) * n + z * state[0],)
    pre = gi + gh
    return (np.tanh(pre) if nonlinearity == "tanh" else np.maximum(pre, 0.0),)


def _run_direction(op, seq, state, cell, reverse, options, mask=None):
    """One direction over (T, B, C); ``mask`` (T, B) keeps the state and the previous output (Note [recurrent
    masks])."""
    steps = range(seq.shape[0] - 1, -1, -1) if reverse else range(seq.shape[0])
    outs, out = [None] * seq.shape[0], np.zeros_like(state[0])
    for t in steps:
        new = _cell_step(op, seq[t], state, cell, *options)
        keep = np.ones((seq.shape[1], 1), bool) if mask is None else mask[t][:, None]
        state = tuple(np.where(keep, n, s) for n, s in zip(new, state))
        out = outs[t] = np.where(keep, new[0], out)
    return np.stack(outs), state


def _recurrent_numpy(op, x, mask, states, weights, attrs):
    seq = x.astype(np.float64)
    seq = np.swapaxes(seq, 0, 1) if attrs["batch_first"] else seq  # (T, B, C)
    dirs, hidden = 2 if attrs["bidirectional"] else 1, attrs["hidden_size"]
    cells = [[None if w is None else w.astype(np.float64) for w in cell] for cell in layer_weights(op, weights, attrs)]
    shape = (attrs["num_layers"] * dirs, seq.shape[1], hidden)
    init = [np.zeros(shape) if s is None else s.astype(np.float64) for s in states]
    finals = []
    for layer in range(attrs["num_layers"]):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            options = (attrs.get("nonlinearity", "tanh"), attrs.get("reset_after", True))
            out, final = _run_direction(op, seq, tuple(s[k] for s in init), cells[k], d == 1, options,
                                        None if mask is None else np.swapaxes(mask, 0, 1))
            outs.append(out)
            finals.append(final)
        seq = np.concatenate(outs, axis=-1)
    out = np.swapaxes(seq, 0, 1) if attrs["batch_first"] else seq
    stacked = [np.stack([f[i] for f in finals]) for i in range(_states(op))]
    return [a.astype(x.dtype) for a in [out] + stacked]


def _attach(op):
    """The shape rule and reference of ``op``: inputs ``x, mask, *states, *weights`` split by its state count."""
    n = _states(op)

    def infer(x, mask, *rest, **attrs):
        return _recurrent_type(op, x, mask, rest[:n], rest[n:], attrs)

    op.infer(named_rule(infer, op.name, "type"))
    op.reference(named_rule(lambda x, mask, *rest, **attrs: _recurrent_numpy(op, x, mask, rest[:n], rest[n:], attrs),
                            op.name, "numpy"))


for _op in RECURRENT:
    _attach(_op)
