"""Values the IR cannot hold are refused before lowering with exit 3 naming the op and what to do instead: a dtype
portx has no name for (complex32 from ``x.chalf()``) and sparse tensors (CSR/COO); never a crash (exit 70)."""
import pytest
import torch

from portx.errors import UnsupportedOps
from portx.frontends.torch import export_module, lower_exported
from tests.support.harness import Wrap


def _refusal(fn, *inputs) -> UnsupportedOps:
    with pytest.raises(UnsupportedOps) as info:
        lower_exported(export_module(Wrap(fn), inputs))
    assert info.value.exit_code == 3
    return info.value


def test_complex32_is_refused_naming_the_dtype_and_the_alternative():
    exc = _refusal(lambda x: x.chalf(), torch.randn(2, 3))
    assert "aten::chalf" in str(exc) and "complex32" in str(exc) and "complex64" in str(exc)


def test_a_sparse_input_is_refused_naming_the_layout():
    exc = _refusal(lambda x, y: torch.sparse.sampled_addmm(x, y, y.t()),
                   torch.eye(3).to_sparse_csr(), torch.randn(3, 3))
    assert "input" in str(exc) and "sparse_csr" in str(exc) and "to_dense" in str(exc)


def test_a_sparse_result_is_refused():
    exc = _refusal(lambda x: x.to_sparse(), torch.randn(2, 3))
    assert "sparse_coo" in str(exc)
