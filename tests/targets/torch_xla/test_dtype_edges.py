"""torch-xla emitter at the edges of a float dtype: literals at float32's largest value, and bfloat16 outputs.

A float32 constant written in its shortest round-trip form can lie past the dtype's largest finite value
(``3.4028235e+38`` > ``finfo(float32).max``), which torch refuses as a Python number for a float32 tensor; and a
bfloat16 output must come back from the run as bfloat16, not widened.

Example:
    pytest tests/targets/torch_xla/test_dtype_edges.py
"""
import ml_dtypes
import numpy as np
import torch

from portx.frontends.torch import export_module, lower_exported
from portx.targets.torch_xla.runtime import run_torch
from portx.weights.tensors import array_of, tensor_of
from tests.support.harness import check_torch_op, emit_and_load


def test_nan_to_num_writes_float32_max_as_a_number_torch_accepts(tmp_path):
    x = torch.tensor([[1.0, float("nan"), float("inf"), -float("inf")], [0.5, -2.0, 3.0, float("inf")]])
    graph = check_torch_op(torch.nan_to_num, x, target="torch-xla")  # runs the emitted model: torch.where(m, MAX, x)
    _, code = emit_and_load(graph, tmp_path)
    assert "3.4028234663852886e+38" in code and "3.4028235e+38" not in code


def test_bfloat16_round_trips_through_numpy():
    t = torch.tensor([1.5, -2.25, 3.0e38], dtype=torch.bfloat16)
    array = array_of(t)
    assert array.dtype == ml_dtypes.bfloat16
    assert torch.equal(tensor_of(array), t)


def test_bfloat16_output_keeps_its_dtype(tmp_path):
    class ToBf16(torch.nn.Module):
        def forward(self, x):
            return x.bfloat16() * 2

    x = torch.randn(2, 3)
    graph = lower_exported(export_module(ToBf16(), (x,)))
    assert graph.outputs[0].type.dtype == "bfloat16"
    model, _ = emit_and_load(graph, tmp_path)
    (got,) = run_torch(model, [x.numpy()])
    assert got.dtype == ml_dtypes.bfloat16
    assert np.array_equal(got.astype(np.float32), ToBf16()(x).float().numpy())
