"""Bad-input matrix for Keras sources (``--to torch-xla``): exit code, a message naming the file or layer,
and no OUT afterwards. Also: layer names that try to inject code convert to safe, verified PyTorch."""
import ast
import json
import re

import keras
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from portx.cli import main
from tests.support.unsupported import AlsoUnsupportedLayer, UnsupportedLayer


def _dense(path, name="fc"):
    keras.utils.set_random_seed(0)
    x = keras.Input((4,), name="x")
    keras.Model(x, keras.layers.Dense(3, name=name)(x)).save(path)
    return path


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _random(path):
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    return path


def _pt2_named_keras(path):
    module = torch.nn.Linear(4, 3).eval()
    torch.export.save(torch.export.export(module, (torch.randn(2, 4),)), path)
    return path


def _lambda(path):
    x = keras.Input((4,))
    keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0, name="double_it")(x)).save(path)
    return path


class Doubler(keras.layers.Layer):
    """A custom layer that is not registered: a file cannot name where its code lives."""

    def call(self, x):
        return x * 2.0


def _custom(path):
    x = keras.Input((4,))
    keras.Model(x, Doubler(name="twice")(keras.layers.Dense(4, name="fc")(x))).save(path)
    return path


def _unsupported(path):
    x = keras.Input((6, 4))
    y = UnsupportedLayer(name="odd_a")(x)
    y = AlsoUnsupportedLayer(name="odd_b")(keras.layers.Dense(4, name="fc")(y))
    keras.Model(x, y).save(path)
    return path


def _dynamic(path):
    """An image input of unknown size: unlike a sequence's (a default example length), it needs --input."""
    x = keras.Input((None, None, 3), name="seq")
    keras.Model(x, keras.layers.Conv2D(2, 3, name="conv")(x)).save(path)
    return path


CASES = [  # (id, make(tmp) -> path, extra args, exit code, message regex)
    ("truncated-keras", lambda d: _truncate(_dense(d / "m.keras")), [], 2, r"m\.keras: not a readable \.keras"),
    ("truncated-h5", lambda d: _truncate(_dense(d / "m.h5")), [], 2, r"m\.h5: not a readable HDF5"),
    ("random-keras", lambda d: _random(d / "r.keras"), [], 2, r"r\.keras: not a readable \.keras"),
    ("random-h5", lambda d: _random(d / "r.h5"), [], 2, r"r\.h5: not a readable HDF5"),
    ("pt2-named-keras", lambda d: _pt2_named_keras(d / "p.keras"), [], 2, r"p\.keras: .*no config\.json"),
    ("empty-keras", lambda d: (d / "e.keras").write_bytes(b"") or d / "e.keras", [], 2, r"e\.keras: is empty"),
    ("missing-keras", lambda d: d / "nope.keras", [], 2, r"nope\.keras: no such file"),
    ("lambda", lambda d: _lambda(d / "lam.keras"), [], 2, r"lam\.keras: Lambda layer double_it.*--unsafe-keras"),
    ("lambda-h5", lambda d: _lambda(d / "lam.h5"), [], 2, r"lam\.h5: Lambda layer double_it.*--unsafe-keras"),
    ("unknown-custom-class", lambda d: _custom(d / "c.keras"), [], 2, r"c\.keras: layer twice has custom class "
     r"Doubler"),
    ("unsupported-layers", lambda d: _unsupported(d / "u.keras"), [], 3, r"(?s)(UnsupportedLayer.*AlsoUnsupported"
     r"Layer|AlsoUnsupportedLayer.*UnsupportedLayer)"),
    ("none-dimension", lambda d: _dynamic(d / "dyn.keras"), [], 2, r"seq.*unknown"),
    ("input-unknown-name", lambda d: _dynamic(d / "dyn.keras"), ["--input", "nope:1x5x3"], 2, r"--input nope"),
    ("export-tpu", lambda d: _dense(d / "m.keras"), ["--export-tpu"], 2, r"--export-tpu .*--to torch-xla"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_keras_input(tmp_path, case):
    _, make, extra, code, message = case
    src = make(tmp_path)
    out = tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out), *extra])
    assert run.exit_code == code, run.output
    assert re.search(message, run.output), run.output
    assert "Traceback" not in run.output and "internal error" not in run.output
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".portx-" in p.name]


def test_unsupported_layers_name_every_layer(tmp_path):
    run = CliRunner().invoke(main, ["convert", str(_unsupported(tmp_path / "u.keras")), "--to", "torch-xla",
                                    "-o", str(tmp_path / "out")])
    assert run.exit_code == 3 and "odd_a" in run.output and "odd_b" in run.output, run.output


def test_none_dimension_converts_with_input(tmp_path):
    run = CliRunner().invoke(main, ["convert", str(_dynamic(tmp_path / "dyn.keras")), "--to", "torch-xla",
                                    "-o", str(tmp_path / "out"), "--input", "seq:2x5x6x3", "--json"])
    assert run.exit_code == 0, run.output
    assert json.loads((tmp_path / "out" / "report.json").read_text())["inputs"] == [["seq", [2, 5, 6, 3], "float32"]]


def test_out_exists_without_force(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    run = CliRunner().invoke(main, ["convert", str(_dense(tmp_path / "m.keras")), "--to", "torch-xla",
                                    "-o", str(tmp_path / "out")])
    assert run.exit_code == 2 and "already exists" in run.output
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


# Layer names a hostile or careless author could write: quotes, newlines, code, keywords, the names
# model.py itself uses, unicode, backslashes, a name that is all digits up front, and a 300-character name.
EVIL = ["a'b", 'q"uote', "new\nline", "__import__('os').system('touch MARKER')", "class", "None", "self", "forward",
        "torch", "nn", "F", "load_model", "WEIGHTS", "层ñé", "x" * 300, "1abc", "sp ace", '"""; import os #',
        "\\", "training", "to", "lambda", "import"]


def _evil_model(path):
    keras.utils.set_random_seed(0)
    x = keras.Input((6, 6, 2), name="in\"put'\n__import__('os').system('touch MARKER')")
    y = x
    for i, name in enumerate(EVIL):
        kind = i % 3
        if kind == 0:
            y = keras.layers.Conv2D(2, 3, padding="same", name=name)(y)
        elif kind == 1:
            y = keras.layers.BatchNormalization(name=name)(y)
        else:
            y = keras.layers.ReLU(name=name)(y)
    y = keras.layers.Flatten(name="flat'\n")(y)
    y = keras.layers.Dense(3, name="__import__('os').system('touch MARKER2')")(y)
    model = keras.Model(x, y)
    rng = np.random.default_rng(2)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.set_weights([rng.uniform(0.5, 1.5, 2), rng.normal(0, 0.1, 2), rng.normal(0, 0.1, 2),
                               rng.uniform(0.5, 2, 2)])
    model.save(path)
    return path


def test_layer_names_cannot_inject_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the injected `touch MARKER` would land here
    src, out = _evil_model(tmp_path / "evil.keras"), tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out), "--no-fold-bn"])
    assert run.exit_code == 0, run.output
    assert not list(tmp_path.glob("MARKER*"))
    code = (out / "model.py").read_text(encoding="utf-8")
    tree = ast.parse(code)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "__import__" not in calls and "import os #" not in code
    assert all(len(line) < 200 for line in code.splitlines())
    assert json.loads((out / "report.json").read_text())["verification"]["passed"] is True
    run = CliRunner().invoke(main, ["verify", str(src), str(out), "--trace"])
    assert run.exit_code == 0, run.output
    assert "comparing outputs only" not in run.output
    assert not list(tmp_path.glob("MARKER*"))
