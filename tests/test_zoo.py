"""End-to-end: every zoo model (one per family, see tests/support/zoo.py) converts to Keras-JAX through the API
and through the CLI (.pt2), and verifies, its code written with one block function per kind of block its source
repeats (tests/support/structured_code.py). The way back to PyTorch is in test_zoo_both_ways.py."""
import json
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
import torch
from click.testing import CliRunner

import portx
from portx.cli import main
from tests.support.structured_code import assert_structured
from tests.support.zoo import ZOO

#: the zoo models whose source has two blocks alike (the others' numbered modules all differ: EfficientNet's and
#: Swin's blocks, or are single layers of an nn.Sequential: Note [a block has parts] in passes/blocks.py). ConvNeXt's
#: stage1/stage2 (one class at two widths) and UNet's enc1/enc2/mid/dec1/dec2 (one double conv) number no block in
#: their names: siblings of one source class (Note [sibling blocks] in passes/blocks_siblings.py)
REPEATS = {"convnext", "densenet", "gpt", "mobilenetv3", "resnet", "text_encoder", "unet", "vit"}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_converts_through_api(name, tmp_path):
    model, inputs = ZOO[name]()
    result = portx.convert(model, example_inputs=inputs, to="keras-jax", out=tmp_path / "out")
    ver = result.report["verification"]
    assert ver["passed"], ver
    for row in ver["outputs"]:
        assert row["max_abs"] <= row["atol"] + row["rtol"] * 1e3, row
    batch = result.report["dynamic"][0]  # the batch stays free, checked at 1 and 8 too
    assert batch["symbol"] == "batch" and batch["free"], result.report["warnings"]
    assert {1, 8} <= {c["size"] for c in batch["verified"]} and all(c["passed"] for c in batch["verified"])
    code = result.files["code"].read_text()
    assert "portx" not in code.split('"""', 2)[2]  # the module body never imports or names portx
    assert_structured(result, "keras-jax", repeats=name in REPEATS)
    arrays = [t.numpy() for t in inputs]
    with torch.no_grad():
        want = model(*inputs).numpy()
    jitted = jax.jit(lambda *xs: result.model(list(xs) if len(xs) > 1 else xs[0]))
    np.testing.assert_allclose(np.asarray(jitted(*arrays)), want, atol=2e-4, rtol=2e-4)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_converts_through_cli_from_pt2(name, tmp_path):
    model, inputs = ZOO[name]()
    torch.export.save(torch.export.export(model, inputs), tmp_path / "model.pt2")
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "model.pt2"), "--to", "keras-jax", "-o", str(out)])
    assert run.exit_code == 0, run.output
    report = json.loads((out / "report.json").read_text())
    assert report["verification"]["passed"]
    assert set(report["stages"]) >= {"load", "lower", "passes", "emit", "verify"}


def test_torchscript_pt_through_cli(tmp_path):
    model, inputs = ZOO["resnet"]()
    torch.jit.save(torch.jit.trace(model, inputs), tmp_path / "model.pt")
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(tmp_path / "model.pt"), "-o", str(out),
                                    "--input", "x:1x3x64x64:float32", "--trust-pickle"])
    assert run.exit_code == 0, run.output
    report = json.loads((out / "report.json").read_text())
    assert report["verification"]["passed"] and report["dynamic"][0]["free"], report["warnings"]


def test_emitted_model_loads_in_a_fresh_process_without_portx(tmp_path):
    model, inputs = ZOO["mobilenetv3"]()
    portx.convert(model, example_inputs=inputs, out=tmp_path / "out")
    np.save(tmp_path / "x.npy", inputs[0].numpy())
    with torch.no_grad():
        np.save(tmp_path / "want.npy", model(*inputs).numpy())
    script = textwrap.dedent(f"""
        import os, sys, importlib.util
        sys.modules["portx"] = None  # any import of portx now fails
        os.environ["KERAS_BACKEND"] = "jax"
        import numpy as np
        spec = importlib.util.spec_from_file_location("m", {str(tmp_path / "out" / "model.py")!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        model = m.load_model()
        got = np.asarray(model(np.load({str(tmp_path / "x.npy")!r})))
        np.testing.assert_allclose(got, np.load({str(tmp_path / "want.npy")!r}), atol=1e-4, rtol=1e-4)
        print("fresh-ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "fresh-ok" in done.stdout, done.stderr[-2000:]
