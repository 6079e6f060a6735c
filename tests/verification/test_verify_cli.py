"""``portx verify SRC OUT``: re-checking a converted folder, tampering detection, --trace, --json, exit codes."""
import json
import shutil

import pytest
from click.testing import CliRunner

import portx
from portx.cli import main
from portx.targets.codegen import import_by_path
from tests.support.paths import SAMPLE


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("verify") / "out"
    run = _run("convert", SAMPLE, "-o", out, "--json")
    assert run.exit_code == 0, run.output
    return out


@pytest.fixture(scope="module")
def tampered(converted, tmp_path_factory):
    """A copy of OUT whose block.3 convolution kernel was scaled after conversion."""
    out = tmp_path_factory.mktemp("tampered") / "out"
    shutil.copytree(converted, out)
    model = import_by_path(out / "model.py").load_model()
    layer = model.get_layer("block_3")
    weights = layer.get_weights()
    layer.set_weights([weights[0] * 1.5] + weights[1:])
    model.save_weights(out / "model.weights.json", max_shard_size=2)
    return out


def test_verify_passes_on_three_seeds_without_reading_report_json(converted, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(converted, out)
    (out / "report.json").write_text("{not json")
    run = _run("verify", SAMPLE, out, "--samples", 3, "--seed", 5)
    assert run.exit_code == 0, run.output
    assert "output linear: max abs" in run.output
    assert "on 3 sample(s) (seeds 5..7)" in run.output


def test_verify_json_parses_and_has_one_row_per_seed(converted):
    run = _run("verify", SAMPLE, converted, "--samples", 2, "--json")
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["passed"] is True
    assert [s["seed"] for s in report["samples"]] == [0, 1]
    assert report["outputs"][0]["name"] == "linear" and report["outputs"][0]["max_abs"] < 1e-5
    assert report["inputs"] == [["x", [2, 3, 32, 32], "float32"]]


def test_verify_trace_lists_every_layer_when_all_match(converted):
    run = _run("verify", SAMPLE, converted, "--trace")
    assert run.exit_code == 0, run.output
    lines = [line for line in run.output.splitlines() if line.startswith("    ")]
    assert lines[0].split()[0] == "stem.0" and lines[-1].split()[0] == "head"
    assert "first divergence" not in run.output
    assert all("|" in line for line in lines)  # every layer is also compared with torch's own intermediate


def test_tampered_weights_exit_1_and_name_the_layer(tampered):
    run = _run("verify", SAMPLE, tampered, "--samples", 2)
    assert run.exit_code == 1, run.output
    assert "output linear differs from the source on seed 0" in run.output
    assert "first diverging layer: block.3 (conv)" in run.output


def test_trace_stops_at_the_first_diverging_layer(tampered):
    run = _run("verify", SAMPLE, tampered, "--trace", "--json")
    assert run.exit_code == 1
    report = json.loads(run.stdout)
    rows = report["trace"]
    assert [r["passed"] for r in rows[:-1]] == [True] * (len(rows) - 1)
    assert (rows[-1]["scope"], rows[-1]["op"], rows[-1]["passed"]) == ("block.3", "conv", False)
    assert rows[-1]["max_abs"] > 0.01 and rows[-1]["source"]["passed"] is False
    text = _run("verify", SAMPLE, tampered, "--trace").output
    assert text.splitlines()[-2].lstrip().startswith("block.3 (conv)") and "<- first divergence" in text


def test_edited_model_py_falls_back_to_outputs(tampered, tmp_path):
    out = tmp_path / "edited"
    shutil.copytree(tampered, out)
    code = out / "model.py"
    code.write_text(code.read_text().replace("import keras\n", "import keras  # edited\n", 1))
    run = _run("verify", SAMPLE, out, "--trace")
    assert run.exit_code == 1
    assert "differs from what this portx version writes" in run.output and "comparing outputs only" in run.output
    assert "first divergence" not in run.output


@pytest.mark.parametrize("make_src, expected", [
    (lambda tmp: tmp / "missing.pt2", "no such file"),
    (lambda tmp: (tmp / "junk.pt2").write_bytes(b"not a zip") and tmp / "junk.pt2", "not a readable torch.export"),
], ids=["missing", "junk"])
def test_bad_source_exits_2(converted, tmp_path, make_src, expected):
    run = _run("verify", make_src(tmp_path), converted)
    assert run.exit_code == 2 and expected in run.output


def test_bad_out_exits_2(converted, tmp_path):
    assert _run("verify", SAMPLE, tmp_path / "nothing").exit_code == 2
    out = tmp_path / "no_weights"
    shutil.copytree(converted, out)
    (out / "model.weights.json").unlink()
    run = _run("verify", SAMPLE, out)
    assert run.exit_code == 2 and "model.weights.json: missing" in run.output
    assert _run("verify", SAMPLE, converted, "--samples", 0).exit_code == 2


def test_python_api_raises_and_reports(converted, tampered):
    assert portx.verify(SAMPLE, converted, samples=1)["passed"] is True
    with pytest.raises(portx.VerificationFailed, match=r"first diverging layer: block\.3 \(conv\)"):
        portx.verify(SAMPLE, tampered)
    report = portx.verify(SAMPLE, tampered, check=False)
    assert report["passed"] is False and report["first_divergence"]["value"] == "conv2d_2"
    assert "trace" not in report  # rows only with trace=True


def test_trace_follows_a_conversion_made_with_no_fold_bn(tmp_path):
    """The pass set is not read from report.json: verify finds the one whose code is model.py."""
    out = tmp_path / "unfolded"
    assert _run("convert", SAMPLE, "-o", out, "--no-fold-bn", "--json").exit_code == 0
    run = _run("verify", SAMPLE, out, "--trace")
    assert run.exit_code == 0, run.output
    assert "stem.1 (batch_norm)" in run.output and "comparing outputs only" not in run.output


def test_verify_finds_the_io_layout_a_folder_was_converted_with(tmp_path):
    """--io-layout: report.json's layout says which is tried first (Note [what OUT records]); the emitted model's
    input shapes decide."""
    out = tmp_path / "nhwc"
    assert _run("convert", SAMPLE, "-o", out, "--io-layout", "channels-last", "--json").exit_code == 0
    run = _run("verify", SAMPLE, out, "--samples", 2, "--trace", "--json")
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    assert report["passed"] is True and report["io_layout"] == "channels-last"
    assert report["code_matches"] is True and report["trace"], report.get("note")
    assert report["inputs"] == [["x", [2, 32, 32, 3], "float32"]]
