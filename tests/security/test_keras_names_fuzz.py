"""Fuzzer: a saved Keras model's layer names replaced by hostile ones, converted to both targets with gradients.

Names that collide once sanitised (``Conv``/``conv``/``c-o-n-v``/``conv_1``), control and line-separator
characters (NUL, TAB, CR, U+0085, U+2028), dunder names and random text. Whatever the names, portx converts (the
gradient check passing: each weight paired with its own, Note [gradient pairing]) or refuses in one line (exit 2);
never a traceback, exit 70 or a failed gradient check. CI runs the "ci" hypothesis profile (two examples);
``PORTX_FUZZ=1`` runs 1,000 (Note [fuzz budget]), and scripts/fuzz_campaign.py (``keras-names``) counts every outcome.
"""
import json
import shutil
import tempfile
import zipfile
from pathlib import Path

import keras
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portx.cli import main
from tests.support.fuzz_budget import examples
from tests.support.keras_hostile import edit_config
from tests.support.pt2_hostile import rename_everywhere

HOSTILE = ["Conv", "conv", "c-o-n-v", "conv_1", "CONV", "con\u2028v", "con\x85v", "con\rv", "con\tv", "con\x00v",
           "__class__", "__init__", "conv_layer", "kernel", "bias", "model", "input", "build_model", "self", "x",
           "conv.weight", "1conv", "", " ", "\\", "'", '"', "é", "\U0001f600", "a\u00aalW", "\ufb01"]
#: placeholders of the saved base model, one per named layer (renamed in config.json)
PLACEHOLDERS = ["QQconvAQQ", "QQbnQQ", "QQconvBQQ", "QQdenseQQ", "QQimgQQ"]

_BASE = {}


def base_model() -> Path:
    """A small CNN saved once per process (conv, batch norm, conv, dense, with placeholder names)."""
    if "path" not in _BASE:
        keras.utils.set_random_seed(0)
        x = keras.Input((4, 4, 2), name=PLACEHOLDERS[4])
        y = keras.layers.Conv2D(3, 1, name=PLACEHOLDERS[0])(x)
        y = keras.layers.BatchNormalization(name=PLACEHOLDERS[1])(y)
        y = keras.layers.Conv2D(3, 1, name=PLACEHOLDERS[2])(y)
        y = keras.layers.Dense(2, name=PLACEHOLDERS[3])(y)
        path = Path(tempfile.mkdtemp(prefix="portx-names-")) / "base.keras"
        keras.Model(x, y, name="names").save(path)
        _BASE["path"] = path
    return _BASE["path"]


def fuzz_names(data, workdir):
    """Draw a name per layer and a target, and convert with gradients (the test's body, and the campaign's)."""
    names = data.draw(st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=6)), min_size=5, max_size=5,
                               unique=True), label="names")  # a repeated name: Keras refuses the file itself
    target = data.draw(st.sampled_from(["keras-jax", "torch-xla"]), label="target")

    def rename(config):
        for old, new in zip(PLACEHOLDERS, names):
            rename_everywhere(config, old, new)

    src = edit_config(base_model(), workdir / "m.keras", rename)
    shutil.rmtree(workdir / "out", ignore_errors=True)
    return CliRunner().invoke(main, ["convert", str(src), "--to", target, "-o", str(workdir / "out"), "--grad"])


def check(run, workdir):
    """Exit 0 with the gradients compared and equal, or a one-line refusal (exit 2); nothing else."""
    assert run.exit_code in (0, 2), run.output
    assert "Traceback" not in run.output and "internal error" not in run.output, run.output
    if run.exit_code == 0:
        grads = json.loads((workdir / "out" / "report.json").read_text(encoding="utf-8"))["gradients"]
        assert grads["passed"] and not grads["unmatched_source"] and not grads["unmatched_converted"], grads
    else:
        assert not (workdir / "out").exists()


@settings(max_examples=examples(share=4, floor=2),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_layer_names_convert_with_equal_gradients_or_are_refused(tmp_path, data):
    check(fuzz_names(data, tmp_path), tmp_path)


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_the_issues_colliding_names(tmp_path, to):
    """The hostile matrix's case: names that collide once sanitised paired the wrong gradients (4 of 5 differed)."""
    run = _convert_named(tmp_path, ["Conv", "conv", "conv_1", "c-o-n-v", "con\x00v"], to)
    assert run.exit_code == 0 and "gradients: 1 input(s) and 8 parameter(s)" in run.output, run.output


@pytest.mark.parametrize("to", ["keras-jax", "torch-xla"])
def test_a_name_python_normalises_keeps_its_weights(tmp_path, to):
    """Campaign of 2026-12-06 (exit 70 on torch-xla): ``aªlW`` is a Python identifier, but Python reads
    ``self.aªlW`` as ``self.aalW`` (NFKC), so the module's state_dict lacked the key portx wrote the weights under;
    source paths reach emitted code as ASCII names only (Note [untrusted names])."""
    run = _convert_named(tmp_path, [" ", "self", "a\u00aalW", "\U00108be8g", "\x8b\U0009fc99\U00076ac3"], to)
    assert run.exit_code == 0, run.output


def _convert_named(tmp_path, names, to):
    """``convert --grad`` of the base model with its layers named ``names``, checked as the fuzzer checks a run."""
    def rename(config):
        for old, new in zip(PLACEHOLDERS, names):
            rename_everywhere(config, old, new)

    src = edit_config(base_model(), tmp_path / "m.keras", rename)
    run = CliRunner().invoke(main, ["convert", str(src), "--to", to, "-o", str(tmp_path / "out"), "--grad"])
    check(run, tmp_path)
    return run
