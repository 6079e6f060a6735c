"""Free dims (Note [free dims] in ir/types.py): the batch stays free by default and is verified at the example's
size, 1 and 8; torch.export Dims, Keras None dims and --dynamic axes stay free; --static-batch pins; what
cannot be free is pinned with a warning that names why; bad requests are one-line errors (exit 2, no OUT).
"""
import json
import re

import keras
import numpy as np
import pytest
import torch
from click.testing import CliRunner
from torch import nn

import portx
from portx.cli import main as cli_main
from portx.targets import find_target
from portx.errors import BadInput
from tests.support.consumer import run_consumer


class Tokens(nn.Module):
    """Every way a batch shows up in a torch graph: flatten, a reshape by x.shape[0], an expanded class
    token, and a constant the size of the batch that torch.export folds (a mask of ones)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.proj = nn.Linear(144, 10)
        self.cls = nn.Parameter(torch.randn(1, 1, 5))

    def forward(self, x):
        tokens = self.proj(self.conv(x).flatten(1)).reshape(x.shape[0], 2, 5)
        mask = torch.ones(x.shape[0], 3, 1)
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], 1) * mask


def _tokens():
    torch.manual_seed(0)
    return Tokens().eval()


def _checked(report, symbol, sizes):
    row = next(r for r in report["dynamic"] if r["symbol"] == symbol)
    assert row["free"], report["warnings"]
    assert [c["size"] for c in row["verified"]] == sizes and all(c["passed"] for c in row["verified"]), row
    return row


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_the_batch_is_free_by_default_and_verified_at_three_sizes(tmp_path, to):
    result = portx.convert(_tokens(), example_inputs=(torch.randn(2, 3, 8, 8),), to=to, out=tmp_path / "o")
    _checked(result.report, "batch", [2, 1, 8])
    assert result.report["tpu"]["verdict"] == "ok", result.report["tpu"]
    code = (tmp_path / "o" / "model.py").read_text()
    if to == "keras-jax":
        assert "keras.Input(shape=(3, 8, 8)" in code and "batch_shape" not in code
        assert result.report["tpu"]["symbolic"] == ["batch"]
        for n in (1, 8):
            assert result.model(np.zeros((n, 3, 8, 8), "float32")).shape == (n, 3, 5)
    else:
        assert "x.shape[0]" in code and ".reshape(2," not in code and ".expand(2," not in code
        for n in (1, 8):
            assert result.model(torch.zeros(n, 3, 8, 8)).shape == (n, 3, 5)


def _dims_pt2(path):
    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 6)

        def forward(self, x):
            return self.lin(x).reshape(x.shape[0], x.shape[1], 3, 2).sum(-1)

    batch, steps = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("steps", min=2, max=32)
    program = torch.export.export(Seq().eval(), (torch.randn(3, 5, 4),), dynamic_shapes={"x": {0: batch, 1: steps}})
    torch.export.save(program, path)
    return path


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_torch_export_dims_stay_free_with_their_ranges(tmp_path, to):
    result = portx.convert(_dims_pt2(tmp_path / "seq.pt2"), to=to, out=tmp_path / "o")
    batch = _checked(result.report, "batch", [3, 1, 8])
    assert (batch["min"], batch["max"]) == (1, 64) and batch["torch_symbol"].startswith("s")
    steps = _checked(result.report, "x_1", [5, 8])
    assert (steps["min"], steps["max"], steps["sites"]) == (2, 32, [["x", 1]])
    code = (tmp_path / "o" / "model.py").read_text()
    assert ("keras.Input(shape=(None, 4)" in code) if to == "keras-jax" else ("x.shape[1]" in code)


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_static_pt2_whose_rows_are_independent_gets_a_free_batch(tmp_path, to):
    """Note [static batch] (passes/static_batch.py): exported without Dims at batch 2, freed by the ops' shape
    rules, and checked against the .pt2 itself run on chunks of 2 rows (it cannot run at another batch)."""
    path = tmp_path / "static.pt2"
    torch.export.save(torch.export.export(_tokens(), (torch.randn(2, 3, 8, 8),)), path)
    result = portx.convert(path, to=to, out=tmp_path / "o", grad=False)
    assert _checked(result.report, "batch", [2, 1, 8])["found_by"] == "the ops' shape rules"
    x = torch.randn(5, 3, 8, 8)
    got = find_target(to).run(result.model, [x.numpy()])[0]
    with torch.no_grad():
        assert np.allclose(got, _tokens()(x).numpy(), atol=1e-5)


class _Centred(nn.Module):
    def forward(self, x):
        return x - x.mean(0)  # batch statistics: every row depends on the others


def test_a_static_pt2_whose_rows_mix_keeps_its_batch_and_says_why(tmp_path):
    path = tmp_path / "static.pt2"
    torch.export.save(torch.export.export(_Centred(), (torch.randn(2, 3),)), path)
    result = portx.convert(path, to="keras-jax", out=tmp_path / "o", grad=False)
    assert not result.report["dynamic"][0]["free"]
    assert any(w.startswith("batch pinned at 2: node ") and " mixes rows: " in w and "chunks of 2 rows" in w
               for w in result.report["warnings"]), result.report["warnings"]  # Note [which node mixes rows]
    assert "batch_shape=(2, 3)" in (tmp_path / "o" / "model.py").read_text()


def test_keras_none_dims_stay_free_in_torch(tmp_path):
    keras.utils.set_random_seed(0)
    x = keras.Input((None, 6), name="seq")
    y = keras.layers.Dense(4, name="dense")(x)
    y = keras.layers.Reshape((-1, 2, 2), name="split")(y)
    model = keras.Model(x, keras.layers.GlobalAveragePooling2D(name="pool")(y))
    result = portx.convert(model, to="torch-xla", out=tmp_path / "o", inputs=["seq:2x5x6"])
    _checked(result.report, "batch", [2, 1, 8])
    _checked(result.report, "seq_1", [5, 8])
    code = (tmp_path / "o" / "model.py").read_text()
    assert "seq.shape[1]" in code and not re.search(r"reshape\([^)]*\b5\b", code)
    assert result.model(torch.zeros(3, 7, 6)).shape == (3, 2)


def test_dynamic_flag_frees_an_axis_of_a_live_module(tmp_path):
    class Pool(nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0], x.shape[1], 2, 4).mean(1)

    result = portx.convert(Pool(), example_inputs=(torch.randn(2, 6, 8),), to="keras-jax", out=tmp_path / "o",
                           dynamic=["x:1"])
    _checked(result.report, "x_1", [6, 9])
    assert "keras.Input(shape=(None, 8)" in (tmp_path / "o" / "model.py").read_text()


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_static_batch_pins_the_batch(tmp_path, to):
    result = portx.convert(_tokens(), example_inputs=(torch.randn(2, 3, 8, 8),), to=to, out=tmp_path / "o",
                           static_batch=4)
    assert result.report["dynamic"] == [] and result.report["inputs"][0][1] == [4, 3, 8, 8]
    assert result.report["verification"]["passed"] and result.report["tpu"]["verdict"] == "ok"
    code = (tmp_path / "o" / "model.py").read_text()
    assert ("batch_shape=(4, 3, 8, 8)" in code) if to == "keras-jax" else ("reshape(4, 144)" in code)


def _cli(args):
    return CliRunner().invoke(cli_main, ["convert", *map(str, args)])


@pytest.mark.parametrize("flags, says", [
    (["--static-batch", "100"], "--static-batch 100: input x declares axis 0 free in [1, 64]"),
    (["--static-batch", "0"], "--static-batch 0: a batch size is a whole number >= 1"),
    (["--dynamic", "x:2"], "--dynamic x_2: the model does not run at x_2="),
    (["--dynamic", "x:7"], "--dynamic x:7: input x has 3 axes"),
    (["--dynamic", "y:1"], "--dynamic y:1: the model has no input y"),
    (["--dynamic", "x"], "--dynamic x: expected NAME:AXIS[,AXIS]"),
])
def test_bad_dynamic_requests_are_one_line_errors_and_write_nothing(tmp_path, flags, says):
    out = tmp_path / "o"
    done = _cli([_dims_pt2(tmp_path / "seq.pt2"), "--to", "keras-jax", "-o", out, *flags])
    assert done.exit_code == 2 and says in done.output, done.output
    assert "Traceback" not in done.output and not out.exists()


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_batch_of_one_is_verified_at_its_own_size(tmp_path, to):
    """Note [batch of one]: traced at 2 (torch specializes a size of 1), but verification checks the user's own
    example at 1, and the size checks add 8 only (two compiles of the forward, not three)."""
    x = torch.randn(1, 3, 8, 8)
    result = portx.convert(_tokens(), example_inputs=(x,), to=to, out=tmp_path / "o")
    row = _checked(result.report, "batch", [1, 8])
    assert row["example_size"] == 1 and row["verified"][0]["by"] == "verify"
    ver = result.report["verification"]
    assert ver["inputs"] == [["x", [1, 3, 8, 8], "float32"]]
    assert [b["on"] for b in ver["batches"]] == ["random", "example"] and all(b["passed"] for b in ver["batches"])


def test_a_batch_of_one_the_model_fixes_is_pinned_at_one(tmp_path):
    """Traced at 2 (Note [batch of one]) and pinned there by the diff with 3: the graph goes back to the user's
    batch of 1, so the emitted model takes the example it was given."""

    class Pairs(nn.Module):
        def forward(self, x):
            return x.reshape(2, -1) * 2  # two rows whatever the batch: not free

    result = portx.convert(Pairs(), example_inputs=(torch.randn(1, 4),), to="keras-jax", out=tmp_path / "o")
    row = result.report["dynamic"][0]
    assert not row["free"] and row["example_size"] == 1, result.report["warnings"]
    assert any(w.startswith("batch pinned to 1") for w in result.report["warnings"]), result.report["warnings"]
    assert result.report["inputs"] == [["x", [1, 4], "float32"]] and result.report["verification"]["passed"]
    assert result.model(np.ones((1, 4), "float32")).shape == (2, 2)


def test_load_traces_a_batch_of_one_at_two_where_the_module_runs_there():
    from portx.frontends import load

    src = load(_tokens(), example_inputs=(torch.randn(1, 3, 8, 8),), batch=2)
    assert tuple(src.example_inputs[0].shape) == (2, 3, 8, 8) and src.batch_given == 1
    assert torch.equal(src.example_inputs[0][0], src.example_inputs[0][1])  # the example's row, repeated

    class One(nn.Module):  # fixes the batch to 1: traced at the example, as given
        def forward(self, x):
            return x.reshape(4)

    src = load(One(), example_inputs=(torch.randn(1, 4),), batch=2)
    assert tuple(src.example_inputs[0].shape) == (1, 4) and src.batch_given == 0


def test_an_example_batch_of_zero_is_refused(tmp_path):
    with pytest.raises(BadInput, match="non-empty"):
        portx.convert(_tokens(), example_inputs=(torch.randn(0, 3, 8, 8),), to="keras-jax", out=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_report_json_records_each_dim(tmp_path):
    out = tmp_path / "o"
    done = _cli([_dims_pt2(tmp_path / "seq.pt2"), "--to", "torch-xla", "-o", out])
    assert done.exit_code == 0, done.output
    rows = json.loads((out / "report.json").read_text())["dynamic"]
    assert [(r["symbol"], r["free"], [c["size"] for c in r["verified"]]) for r in rows] == [
        ("batch", True, [3, 1, 8]), ("x_1", True, [5, 8])]


def test_free_batch_models_save_reload_export_and_compile_without_portx(tmp_path):
    """The FreeShape layer is registered serializable; the torch module exports with a batch Dim and compiles."""
    portx.convert(_tokens(), example_inputs=(torch.randn(2, 3, 8, 8),), to="keras-jax", out=tmp_path / "k")
    portx.convert(_tokens(), example_inputs=(torch.randn(2, 3, 8, 8),), to="torch-xla", out=tmp_path / "t")
    run_consumer(f"""
        import keras
        import numpy as np
        model = converted.load_model()
        model.save({str(tmp_path / "saved.keras")!r})
        again = keras.saving.load_model({str(tmp_path / "saved.keras")!r})
        for n in (1, 8):
            x = np.random.default_rng(n).normal(size=(n, 3, 8, 8)).astype("float32")
            np.testing.assert_allclose(np.asarray(again(x)), np.asarray(model(x)), rtol=1e-6, atol=1e-6)
            assert again(x).shape == (n, 3, 5)
    """, tmp_path / "k" / "model.py")
    run_consumer(f"""
        import torch
        model = converted.load_model()
        torch.save(model.state_dict(), {str(tmp_path / "state.pt")!r})
        fresh = converted.build_model()
        fresh.load_state_dict(torch.load({str(tmp_path / "state.pt")!r}, weights_only=True))
        fresh.eval()
        batch = torch.export.Dim("batch", min=1, max=64)
        exported = torch.export.export(fresh, (torch.randn(3, 3, 8, 8),), dynamic_shapes=({{0: batch}},))
        compiled = torch.compile(fresh, backend="aot_eager")
        for n in (1, 8):
            x = torch.randn(n, 3, 8, 8)
            torch.testing.assert_close(exported.module()(x), model(x))
            torch.testing.assert_close(compiled(x), model(x))
    """, tmp_path / "t" / "model.py")
