"""Note [symbolic export] (frontends/torch/symbols.py): a live module is exported once with its batch (and its
``--dynamic`` axes) symbolic; the free-dims stage lowers that one program at a second size by substitution, a dim
torch pinned is pinned with the guard and the model's line, and a module torch.export cannot trace symbolically
falls back to exporting again at a second size ("two lowerings")."""
import torch
from torch import nn

import portx
from portx.frontends import load
from portx.frontends.torch.symbols import export_free, input_symbols


class Rows(nn.Module):
    """Rows independent, with the batch read as a size (a reshape by x.shape[0]) and a folded constant."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(6, 8)

    def forward(self, x):
        return self.lin(x).reshape(x.shape[0], x.shape[1], 2, 4).sum(-1) * torch.ones(x.shape[0], 1, 1)


class Pairs(nn.Module):
    def forward(self, x):
        return x.reshape(2, -1) * 2  # two rows whatever the batch


class NoSymbols(Rows):
    """Refuses a symbolic size, as code that needs a Python int does: torch.export fails with Dim.AUTO only."""

    def forward(self, x):
        if isinstance(x.shape[0], torch.SymInt):
            raise TypeError("needs a concrete batch")
        return super().forward(x)


def _row(report, symbol):
    return next(r for r in report["dynamic"] if r["symbol"] == symbol)


def test_a_live_module_is_exported_once_and_resized_without_tracing():
    src = load(Rows(), example_inputs=(torch.randn(3, 5, 6),))
    assert set(input_symbols(src.program)) == {(0, 0)} and src.pinned == {}
    other = src.resized({(0, 0): 4})
    assert other.program is src.program and tuple(other.example_inputs[0].shape) == (4, 5, 6)
    assert other.lower().inputs[0].type.shape == (4, 5, 6)
    assert src.lower().inputs[0].type.shape == (3, 5, 6)  # lowering at 4 did not pin the program's symbol
    assert src.resized({(0, 1): 7}).program is not src.program  # not a symbol: exported again at that size


def test_the_batch_and_a_dynamic_axis_are_found_by_the_symbolic_export(tmp_path):
    result = portx.convert(Rows(), example_inputs=(torch.randn(3, 5, 6),), to="keras-jax", out=tmp_path / "o",
                           dynamic=["x:1"], grad=False)
    for symbol, sizes in (("batch", [3, 1, 8]), ("x_1", [5, 8])):
        row = _row(result.report, symbol)
        assert row["free"] and row["found_by"] == "symbolic export", result.report["warnings"]
        assert [c["size"] for c in row["verified"]] == sizes and all(c["passed"] for c in row["verified"])
    assert "keras.Input(shape=(None, 6)" in (tmp_path / "o" / "model.py").read_text()


def test_a_dim_torch_pins_is_pinned_with_its_guard_and_the_models_line(tmp_path):
    program, pinned = export_free(Pairs(), (torch.randn(2, 4),), [(0, 0)])
    assert program is not None and list(pinned) == [(0, 0)]
    assert "Eq(" in pinned[(0, 0)] and "x.reshape(2, -1) * 2" in pinned[(0, 0)], pinned
    result = portx.convert(Pairs(), example_inputs=(torch.randn(1, 4),), to="keras-jax", out=tmp_path / "o")
    row = _row(result.report, "batch")
    assert not row["free"] and row["found_by"] == "symbolic export"
    said = [w for w in result.report["warnings"] if w.startswith("batch pinned to 1: torch.export specialised it")]
    assert said and "test_torch_symbols.py" in said[0], result.report["warnings"]


def test_a_module_that_does_not_export_symbolically_falls_back_to_two_lowerings(tmp_path):
    assert export_free(NoSymbols(), (torch.randn(3, 5, 6),), [(0, 0)]) == (None, None)
    result = portx.convert(NoSymbols(), example_inputs=(torch.randn(3, 5, 6),), to="keras-jax", out=tmp_path / "o",
                           grad=False)
    row = _row(result.report, "batch")
    assert row["free"] and row["found_by"] == "two lowerings", result.report["warnings"]
