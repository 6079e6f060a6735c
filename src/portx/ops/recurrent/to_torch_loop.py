"""torch-xla emit rule for the recurrent nodes nn.LSTM / nn.GRU / nn.RNN cannot run: a Keras mask or a GRU with
``reset_after=False`` (Note [recurrent masks]). The weights stay in the nn module (the same state_dict as the
plain rule), and ``forward`` runs the cell over the time steps in a Python loop of static length, which
``torch.export`` and PyTorch/XLA trace to straight-line code: a masked step keeps the states and repeats the
previous output (``torch.where``), as Keras's RNN does.

Example generated code (GRU, reset_after=False, masked):
    gru_h = x.new_zeros((x.shape[0], 3))
    gru_out = torch.zeros_like(gru_h)
    gru_outs = []
    for gru_step in range(x.shape[1]):
        gru_gi = F.linear(x[:, gru_step], self.gru.weight_ih_l0, self.gru.bias_ih_l0).chunk(3, -1)
        ...
        gru_h = torch.where(mask[:, gru_step, None], gru_h_new, gru_h)
"""
from __future__ import annotations

from ...errors import Unsupported
from ..recurrent import GRU, LSTM, mask_input, state_inputs

__all__ = ["emit_loop"]


def _cell_lines(node, module, x_t, h, c, fresh) -> tuple:
    """Lines computing one step, and the names of the new (h, c or None)."""
    w_ih, w_hh = f"{module}.weight_ih_l0", f"{module}.weight_hh_l0"
    b_ih, b_hh = (f"{module}.bias_ih_l0", f"{module}.bias_hh_l0") if node.attrs["has_biases"] else ("None", "None")
    h_new = fresh("h_new")
    if node.op is LSTM:
        gates, c_new = fresh("gates"), fresh("c_new")
        return [f"{gates} = (F.linear({x_t}, {w_ih}, {b_ih}) + F.linear({h}, {w_hh}, {b_hh})).chunk(4, -1)",
                f"{c_new} = torch.sigmoid({gates}[1]) * {c} + torch.sigmoid({gates}[0]) * torch.tanh({gates}[2])",
                f"{h_new} = torch.sigmoid({gates}[3]) * torch.tanh({c_new})"], h_new, c_new
    if node.op is GRU:
        gi, gh, r, z, n = fresh("gi"), fresh("gh"), fresh("r"), fresh("z"), fresh("n")
        lines = [f"{gi} = F.linear({x_t}, {w_ih}, {b_ih}).chunk(3, -1)"]
        if node.attrs.get("reset_after", True):
            lines += [f"{gh} = F.linear({h}, {w_hh}, {b_hh}).chunk(3, -1)",
                      f"{r} = torch.sigmoid({gi}[0] + {gh}[0])", f"{z} = torch.sigmoid({gi}[1] + {gh}[1])",
                      f"{n} = torch.tanh({gi}[2] + {r} * {gh}[2])"]
        else:  # W_hn (r * h) + b_hn (Note [recurrent masks])
            size = int(node.attrs["hidden_size"])
            part = (lambda w, s: "None" if w == "None" else f"{w}[{s}]")
            lines += [f"{gh} = F.linear({h}, {w_hh}[:{2 * size}], {part(b_hh, f':{2 * size}')}).chunk(2, -1)",
                      f"{r} = torch.sigmoid({gi}[0] + {gh}[0])", f"{z} = torch.sigmoid({gi}[1] + {gh}[1])",
                      f"{n} = torch.tanh({gi}[2] + F.linear({r} * {h}, {w_hh}[{2 * size}:], "
                      f"{part(b_hh, f'{2 * size}:')}))"]
        return lines + [f"{h_new} = (1 - {z}) * {n} + {z} * {h}"], h_new, None
    act = "torch.relu" if node.attrs.get("nonlinearity") == "relu" else "torch.tanh"
    return [f"{h_new} = {act}(F.linear({x_t}, {w_ih}, {b_ih}) + F.linear({h}, {w_hh}, {b_hh}))"], h_new, None


def emit_loop(node, t, module, names) -> None:
    """Write the loop for ``node`` whose weights ``module`` (``self.gru``) holds; ``names``: its output names."""
    a = node.attrs
    if a["num_layers"] != 1 or a["bidirectional"]:
        raise Unsupported(f"{node.op.name} with a mask or reset_after=False over {a['num_layers']} layers "
                          f"(bidirectional={a['bidirectional']}): portx writes one direction of one layer")
    base = names[0]

    def fresh(hint):
        return t.ns.name(f"{base}_{hint}", hint)

    x, (batch, time) = t.ref(node.inputs[0]), ((0, 1) if a["batch_first"] else (1, 0))
    given = [None if s is None else t.ref(s) for s in state_inputs(node)]
    states = [fresh(k) for k in ("h", "c")[:len(given)]]
    for state, init in zip(states, given):
        t.body.line(f"{state} = {init}[0]" if init is not None else
                    f"{state} = {x}.new_zeros(({x}.shape[{batch}], {int(a['hidden_size'])}))")
    out, outs, step = fresh("out"), fresh("outs"), fresh("step")
    t.body.line(f"{out} = torch.zeros_like({states[0]})")
    t.body.line(f"{outs} = []")
    t.body.line(f"for {step} in range({x}.shape[{time}]):")
    t.body.indent += 1
    x_t = f"{x}[:, {step}]" if a["batch_first"] else f"{x}[{step}]"
    lines, h_new, c_new = _cell_lines(node, module, x_t, states[0], states[1] if len(states) > 1 else None, fresh)
    for line in lines:
        t.body.line(line)
    mask = mask_input(node)
    keep = None if mask is None else f"{t.ref(mask)}[:, {step}, None]"
    for state, new in zip(states, (h_new, c_new)):
        t.body.line(f"{state} = {new}" if keep is None else f"{state} = torch.where({keep}, {new}, {state})")
    t.body.line(f"{out} = {h_new}" if keep is None else f"{out} = torch.where({keep}, {h_new}, {out})")
    t.body.line(f"{outs}.append({out})")
    t.body.indent -= 1
    t.body.line(f"{names[0]} = torch.stack({outs}, dim={time})")
    for name, state in zip(names[1:], states):
        t.body.line(f"{name} = {state}.unsqueeze(0)")
