"""Run-time sizes in shape ops (Note [free dims] in ir/types.py): a slice, narrow, arange or pad by a free
size (``self.pos[:, :ids.shape[1]]``) keeps a declared sequence dim free on both targets (Keras: the FreeShape
layer reads the size from the input; torch: ``x.shape[i]`` arithmetic), verified at two sizes, and the
keras-jax TPU proof lowers it with symbolic shapes.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import portx
from portx.targets import find_target


class Positions(nn.Module):
    """A hand-written transformer's input: a learned position table cut to the sequence length (a slice, a
    narrow, and an embedding of ``arange`` unless ``count=False``), padded by the sequence length: every bound
    a run-time size."""

    def __init__(self, count=True):
        super().__init__()
        self.emb, self.pe = nn.Embedding(50, 8), nn.Embedding(32, 8)
        self.pos = nn.Parameter(torch.randn(1, 32, 8))
        self.count = count

    def forward(self, ids):
        n = ids.shape[1]
        x = self.emb(ids) + self.pos[:, :n] + self.pos.narrow(1, 1, n)
        return F.pad(x + self.pe(torch.arange(n)) if self.count else x, (0, 0, 0, n))


def _model(count=True):
    torch.manual_seed(0)
    return Positions(count).eval()


def _seq(report, symbol):
    return next(row for row in report["dynamic"] if row["symbol"] == symbol)


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_position_table_cut_to_the_sequence_keeps_it_free(to):
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(0))
    result = portx.convert(_model(), to=to, example_inputs=(ids,), dynamic=["ids:1"], grad=False)
    row = _seq(result.report, "ids_1")
    assert row["free"], result.report["warnings"]
    assert [c["size"] for c in row["verified"]] == [7, 10] and all(c["passed"] for c in row["verified"])
    longer = torch.randint(0, 50, (3, 12), generator=torch.Generator().manual_seed(1))
    got = find_target(to).run(result.model, [longer.numpy()])[0]
    with torch.no_grad():
        want = _model()(longer).numpy()
    assert got.shape == want.shape == (3, 24, 8) and np.allclose(got, want, atol=1e-5)
    if to == "keras-jax":  # jax.export with both dims symbolic (torchax traces the example's sizes only)
        assert result.report["tpu"]["symbolic"] == ["batch", "ids_1"]


def test_a_declared_sequence_dim_of_a_pt2_stays_free_and_lowers_for_tpu(tmp_path):
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(0))
    seq = torch.export.Dim("seq", min=2, max=30)
    program = torch.export.export(_model(count=False), (ids,), dynamic_shapes=({1: seq},))
    torch.export.save(program, tmp_path / "m.pt2")
    result = portx.convert(str(tmp_path / "m.pt2"), to="keras-jax", grad=False)
    assert _seq(result.report, "ids_1")["free"], result.report["warnings"]
    assert result.model.inputs[0].shape[1] is None
    assert result.report["tpu"]["verdict"] == "ok" and result.report["tpu"]["symbolic"] == ["batch", "ids_1"]


class RunningPositions(nn.Module):
    """Positions two ways over a free sequence: an arange of its length (portx counts ones) and the running sum of
    the attention mask (Hugging Face's position_ids from a padded mask), each fed through an embedding."""

    def __init__(self):
        super().__init__()
        self.emb, self.pe = nn.Embedding(50, 8), nn.Embedding(32, 8)

    def forward(self, ids, mask):
        from_mask = (mask.cumsum(-1) - 1).clamp(min=0)
        return self.emb(ids) + self.pe(torch.arange(ids.shape[1])) + self.pe(from_mask)


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_running_sums_over_a_free_sequence_lower_for_tpu_without_a_dynamic_window(to, tmp_path):
    # Note [running sums over a free axis]: JAX's cumsum over a symbolic size is stablehlo.dynamic_reduce_window
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 4:] = 0
    torch.manual_seed(0)
    model = RunningPositions().eval()
    result = portx.convert(model, to=to, example_inputs=(ids, mask), dynamic=["ids:1", "mask:1"], grad=False,
                           out=tmp_path / "o")
    row = _seq(result.report, "ids_1")
    assert row["free"] and all(c["passed"] for c in row["verified"]), result.report["warnings"]
    tpu = result.report["tpu"]
    assert tpu["verdict"] == "ok" and "dynamic_reduce_window" not in str(tpu), tpu
    longer_mask = torch.ones(3, 12, dtype=torch.long)
    longer_mask[0, 9:] = 0
    longer = torch.randint(0, 50, (3, 12), generator=torch.Generator().manual_seed(1))
    got = find_target(to).run(result.model, [longer.numpy(), longer_mask.numpy()])[0]
    with torch.no_grad():
        want = model(longer, longer_mask).numpy()
    assert got.shape == want.shape == (3, 12, 8) and np.allclose(got, want, atol=1e-5)
    if to == "keras-jax":  # the mask's running sum is a triangular product, the arange an iota
        assert tpu["symbolic"] == ["batch", "ids_1"]
        code = (tmp_path / "o" / "model.py").read_text()
        assert "counting=True)" in code and "counting=False)" in code and "ops.cumsum(" not in code
