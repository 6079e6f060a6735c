"""Inputs that are not batches (Note [rows independent] in verification/chunks.py, Note [build-time refusal] in
targets/refused.py): axis 0 stays free only where the model on b rows is the model on each chunk of the
example's rows; a single matrix, a point set, inputs whose axis 0 differ keep their shapes, with a warning that
names why, and the user's own example is what the emitted model takes and is verified on.
"""
import numpy as np
import pytest
import torch
from torch import nn

import portx
from portx.targets import find_target

TARGETS = ["keras-jax", "torch-xla"]


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _converted(fn, inputs, to):
    """(report, outputs of the emitted model on ``inputs``, torch's outputs)."""
    result = portx.convert(Fn(fn), to=to, example_inputs=inputs, grad=False)
    got = find_target(to).run(result.model, [x.numpy() for x in inputs])
    want = fn(*inputs)
    return result.report, got, [want] if isinstance(want, torch.Tensor) else list(want)


def _batch(report):
    return next(row for row in report["dynamic"] if row["symbol"] == "batch")


@pytest.mark.parametrize("to", TARGETS)
def test_a_matrix_factorisation_keeps_its_matrix_and_says_why(to):
    torch.manual_seed(0)
    a = torch.randn(5, 5)
    report, got, want = _converted(torch.linalg.qr, (a,), to)
    assert [g.shape for g in got] == [tuple(w.shape) for w in want]
    assert all(np.allclose(abs(g), abs(w.numpy()), atol=1e-4) for g, w in zip(got, want))  # QR up to signs
    assert not _batch(report)["free"]
    said = " ".join(report["warnings"])
    assert "batch pinned" in said
    assert "linalg_qr (qr)" in said, said  # torch-xla: the node that mixes rows (Note [which node mixes rows])


@pytest.mark.parametrize("to", TARGETS)
def test_inputs_whose_axis_0_differ_are_verified_on_their_own_shapes(to):
    torch.manual_seed(0)
    inputs = (torch.randn(1, 5), torch.randn(2, 5), torch.randn(3, 5))
    report, got, want = _converted(torch.block_diag, inputs, to)
    assert report["verification"]["inputs"] == [["xs_0", [1, 5], "float32"], ["xs_1", [2, 5], "float32"],
                                                 ["xs_2", [3, 5], "float32"]]
    assert got[0].shape == (6, 15) and np.allclose(got[0], want[0].numpy())
    assert not _batch(report)["free"], report["dynamic"]


@pytest.mark.parametrize("to", TARGETS)
def test_a_pairwise_distance_of_one_row_has_torchs_shape(to):
    torch.manual_seed(0)
    report, got, want = _converted(nn.functional.pdist, (torch.randn(1, 4),), to)
    assert got[0].shape == tuple(want[0].shape) == (0,)
    assert not _batch(report)["free"]
    assert "rows are not independent" in " ".join(report["warnings"])


def test_rows_that_are_independent_keep_the_batch_free():
    torch.manual_seed(0)
    report, got, want = _converted(lambda x: torch.linalg.qr(x).R, (torch.randn(1, 4, 4),), "keras-jax")
    assert _batch(report)["free"] and [c["size"] for c in _batch(report)["verified"]] == [1, 8]
    assert np.allclose(abs(got[0]), abs(want[0].numpy()), atol=1e-4)
