"""``torch.autocast`` regions (``wrap_with_autocast`` in an exported program, as timm writes them) import as the
dtype casts they imply; ``enabled=False`` runs the region in its input dtype. Live modules and ``.pt2`` archives,
both targets."""
import warnings

import pytest
import torch

import portx
from portx.frontends import load
from tests.support.harness import TARGETS

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


class _Autocast(torch.nn.Module):
    """A linear layer inside ``torch.autocast(device, dtype, enabled)``, its result cast back to float32."""

    def __init__(self, device="cpu", dtype=torch.bfloat16, enabled=True):
        super().__init__()
        self.linear, self.device, self.dtype, self.enabled = torch.nn.Linear(8, 4), device, dtype, enabled

    def forward(self, x):
        with torch.autocast(self.device, dtype=self.dtype, enabled=self.enabled):
            y = self.linear(x)
        return y.float() * 2


def _module(**options):
    torch.manual_seed(0)
    return _Autocast(**options).eval()


def _dtypes(graph) -> set:
    return {v.type.dtype for node in graph.nodes for v in node.outputs}


@pytest.mark.parametrize("target", TARGETS)
def test_an_autocast_region_converts_as_its_casts(tmp_path, target):
    module, x = _module(), torch.randn(3, 8)
    assert "bfloat16" in _dtypes(load(module, example_inputs=(x,)).lower())
    result = portx.convert(module, example_inputs=(x,), to=target, out=tmp_path / "o", grad=False)
    assert result.report["verification"]["passed"] is True, result.report["verification"]


def test_a_disabled_autocast_region_runs_in_its_input_dtype(tmp_path):
    module, x = _module(device="cuda", dtype=torch.float16, enabled=False), torch.randn(3, 8)
    assert _dtypes(load(module, example_inputs=(x,)).lower()) == {"float32"}
    result = portx.convert(module, example_inputs=(x,), out=tmp_path / "o", grad=False)
    assert result.report["verification"]["outputs"][0]["atol"] < 1e-4  # compared as float32, not float16


def test_a_pt2_archive_with_an_autocast_region_loads(tmp_path):
    """The higher-order op's arguments have no schema names ("" in model.json): read, not refused."""
    x = torch.randn(3, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.export.save(torch.export.export(_module(), (x,)), tmp_path / "m.pt2")
    result = portx.convert(str(tmp_path / "m.pt2"), out=tmp_path / "o", grad=False)
    assert result.report["verification"]["passed"] is True, result.report["verification"]
