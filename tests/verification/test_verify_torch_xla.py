"""``portx verify SRC OUT`` for ``--to torch-xla`` folders, and convert's first-divergence search there.

OUT is recognised by its weights file (model.safetensors); of report.json only the pinned batch and io
layout are read. A weight of one layer is scaled in model.safetensors after conversion: verify and
convert's localisation must name that layer.
"""
import json
import shutil

import keras
import numpy as np
import pytest
from click.testing import CliRunner
from safetensors.numpy import load_file, save_file

import portx
from portx import api
from portx.cli import main
from portx.session.report import Verification
from portx.session.sections import verification_failed
from portx.targets.torch_xla.emitter import emit_torch
from portx.verification.compare import DEFAULT_ATOL, DEFAULT_RTOL
from portx.verification.dynamic import verify_example


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _model():
    keras.utils.set_random_seed(0)
    x = keras.Input((8, 8, 3), name="image")
    y = keras.layers.Conv2D(4, 3, padding="same", name="stem")(x)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.ReLU(name="act")(y)
    y = keras.layers.Conv2D(4, 3, padding="same", name="conv_b")(y)
    y = keras.layers.GlobalAveragePooling2D(name="gap")(y)
    y = keras.layers.Dense(3, name="head")(y)
    model = keras.Model(x, y, name="tiny")
    rng = np.random.default_rng(1)
    model.get_layer("bn").set_weights([rng.uniform(0.5, 1.5, 4), rng.normal(0, 0.1, 4), rng.normal(0, 0.1, 4),
                                       rng.uniform(0.5, 2, 4)])
    return model


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    folder = tmp_path_factory.mktemp("src")
    model = _model()
    model.save(folder / "tiny.keras")
    model.save(folder / "tiny.h5")
    return folder / "tiny.keras", folder / "tiny.h5"


@pytest.fixture(scope="module")
def converted(sources, tmp_path_factory):
    out = tmp_path_factory.mktemp("verify") / "out"
    run = _run("convert", sources[0], "--to", "torch-xla", "-o", out, "--json")
    assert run.exit_code == 0, run.output
    return out


def _scale_weight(folder, key, factor=1.5):
    weights = load_file(folder / "model.safetensors")
    weights[key] = weights[key] * factor
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


@pytest.fixture(scope="module")
def tampered(converted, tmp_path_factory):
    """A copy of OUT whose conv_b kernel was scaled after conversion."""
    out = tmp_path_factory.mktemp("tampered") / "out"
    shutil.copytree(converted, out)
    _scale_weight(out, "conv_b.weight")
    return out


def test_verify_passes_on_three_seeds_without_reading_report_json(sources, converted, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(converted, out)
    (out / "report.json").write_text("{not json")
    for src in sources:  # the .h5 copy of the same model checks against the same folder
        run = _run("verify", src, out, "--samples", 3, "--seed", 5)
        assert run.exit_code == 0, run.output
        assert "output head: max abs" in run.output
        assert "on 3 sample(s) (seeds 5..7)" in run.output


def test_verify_json_has_one_row_per_seed(sources, converted):
    run = _run("verify", sources[0], converted, "--samples", 2, "--json")
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["passed"] is True and report["target"] == "torch-xla"
    assert [s["seed"] for s in report["samples"]] == [0, 1]
    assert report["outputs"][0]["name"] == "head" and report["outputs"][0]["max_abs"] < 1e-5
    assert report["inputs"] == [["image", [2, 8, 8, 3], "float32"]]


def test_verify_trace_lists_every_layer_when_all_match(sources, converted):
    run = _run("verify", sources[1], converted, "--trace")
    assert run.exit_code == 0, run.output
    lines = [line for line in run.output.splitlines() if line.startswith("    ")]
    scopes = [line.split()[0] for line in lines]
    assert "stem" in scopes and "conv_b" in scopes and scopes[-1] == "head"
    # batch norms stay layers by default (--fold-bn folds them); the relu after bn writes over its tensor in place
    # (as torchvision's ReLU(inplace=True)), so the trace reads the relu's variable and not bn's
    assert "self.bn = nn.BatchNorm2d" in (converted / "model.py").read_text() and "act" in scopes and "bn" not in scopes
    assert "first divergence" not in run.output and "comparing outputs only" not in run.output


def test_tampered_weights_exit_1_and_name_the_layer(sources, tampered):
    run = _run("verify", sources[0], tampered, "--samples", 2)
    assert run.exit_code == 1, run.output
    assert "output head differs from the source on seed 0" in run.output
    assert "first diverging layer: conv_b (conv)" in run.output


def test_trace_stops_at_the_first_diverging_layer(sources, tampered):
    run = _run("verify", sources[0], tampered, "--trace", "--json")
    assert run.exit_code == 1
    rows = json.loads(run.stdout)["trace"]
    assert [r["passed"] for r in rows[:-1]] == [True] * (len(rows) - 1)
    assert (rows[-1]["scope"], rows[-1]["op"], rows[-1]["passed"]) == ("conv_b", "conv", False)
    assert rows[-1]["max_abs"] > 0.01 and rows[-1]["var"] == "conv_b"
    text = _run("verify", sources[0], tampered, "--trace").output
    assert text.splitlines()[-2].lstrip().startswith("conv_b (conv)") and "<- first divergence" in text


def test_python_api_raises_and_reports(sources, converted, tampered):
    assert portx.verify(sources[0], converted)["passed"] is True
    with pytest.raises(portx.VerificationFailed, match=r"first diverging layer: conv_b \(conv\)"):
        portx.verify(sources[0], tampered)
    report = portx.verify(sources[0], tampered / "model.py", check=False)
    assert report["passed"] is False and report["first_divergence"]["scope"] == "conv_b"
    assert "trace" not in report


def test_convert_localises_a_corrupted_weight_in_the_written_safetensors(sources, tmp_path):
    """convert's own check (Conversion.verify) names the layer whose stored weight differs from the IR's."""
    result = portx.convert(sources[0], to="torch-xla", out=tmp_path / "out")
    _scale_weight(tmp_path / "out", "head.weight", -1.0)
    emitted = emit_torch(result.graph, (tmp_path / "again").mkdir() or tmp_path / "again")
    assert (tmp_path / "again" / "model.py").read_text() == (tmp_path / "out" / "model.py").read_text()
    corrupted = api.TARGETS["torch-xla"].load(tmp_path / "out")
    src = api.load(sources[0])
    ver = verify_example(src, result.graph, corrupted, emitted, api.TARGETS["torch-xla"], 0, DEFAULT_ATOL, DEFAULT_RTOL)
    assert isinstance(ver, Verification) and ver.passed is False  # typed where built (Note [typed sections])
    assert (ver.first_divergence.scope, ver.first_divergence.op) == ("head", "linear")
    result.typed.verification, result.ok = ver, False  # as Conversion.verify stores it
    assert "first diverging node: head (linear)" in str(verification_failed(result))


def test_edited_model_py_falls_back_to_outputs(sources, tampered, tmp_path):
    out = tmp_path / "edited"
    shutil.copytree(tampered, out)
    code = out / "model.py"
    code.write_text(code.read_text().replace("import torch\n", "import torch  # edited\n", 1))
    run = _run("verify", sources[0], out, "--trace")
    assert run.exit_code == 1
    assert "differs from what this portx version writes" in run.output and "comparing outputs only" in run.output
    assert "first divergence" not in run.output


def test_bad_out_exits_2(sources, converted, tmp_path):
    out = tmp_path / "no_weights"
    shutil.copytree(converted, out)
    (out / "model.safetensors").unlink()
    run = _run("verify", sources[0], out)
    assert run.exit_code == 2 and "model.safetensors: missing" in run.output
    out = tmp_path / "damaged"
    shutil.copytree(converted, out)
    data = (out / "model.safetensors").read_bytes()
    (out / "model.safetensors").write_bytes(data[: len(data) // 2])
    run = _run("verify", sources[0], out)
    assert run.exit_code == 2 and "load_model() failed" in run.output and "Traceback" not in run.output
    assert _run("verify", sources[0], converted, "--samples", 0).exit_code == 2


def test_trace_follows_no_fold_bn_and_channels_first_io(sources, tmp_path):
    """OUT's flags are not read from report.json: verify finds the pass set and I/O layout of model.py."""
    out = tmp_path / "unfolded"
    assert _run("convert", sources[0], "--to", "torch-xla", "-o", out, "--no-fold-bn",
                "--io-layout", "channels-first", "--json").exit_code == 0
    run = _run("verify", sources[0], out, "--trace", "--json")
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["code_matches"] is True and report["inputs"] == [["image", [2, 3, 8, 8], "float32"]]
    assert ("act", "relu") in [(r["scope"], r["op"]) for r in report["trace"]]
    assert "nn.BatchNorm2d" in (out / "model.py").read_text()  # --no-fold-bn kept it (traced through act: in place)


def test_assert_equivalent_takes_torch_xla_folders(sources, converted, tampered):
    from portx.testing import assert_equivalent

    model = keras.saving.load_model(sources[0])
    report = assert_equivalent(model, converted, samples=2, seed=4)
    assert report["target"] == "torch-xla" and [s["seed"] for s in report["samples"]] == [4, 5]
    assert_equivalent(sources[0], converted / "model.py", [np.ones((1, 8, 8, 3), np.float32)])
    with pytest.raises(AssertionError, match=r"(?s)DIFFERS.*first diverging layer.*conv_b"):
        assert_equivalent(model, tampered)
