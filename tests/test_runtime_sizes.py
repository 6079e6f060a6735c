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
