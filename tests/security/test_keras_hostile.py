"""Hostile ``.keras`` / ``.h5`` files and careless inputs (``--to torch-xla``): each is refused with exit 2 and
one ``portx:`` line naming the file and the field, leaves no OUT, and runs none of the code it carries.

Also: a 2,000-layer model converts (Note [keras load guards]), the payloads are live (they do run when the
user passes --unsafe-keras), and hostile layer names reach model.py only as safe identifiers.
"""
import ast
import base64
import json
import re
import sys
import zipfile

import h5py
import keras
import numpy as np
import pytest
from click.testing import CliRunner

from portx.cli import main
from tests.support.keras_hostile import (edit_config, lambda_code, layer_config, one_error_line, pickle_payload,
                                         rewrite, small_cnn, small_dense)


def _deep(levels):
    return b'{"x":' * levels + b"1" + b"}" * levels


def _nested_config(d, levels, where):
    """config.json with a ``levels``-deep object at the top (``where="top"``) or inside layer fc's config."""
    src = small_dense(d / "base.keras")
    text = zipfile.ZipFile(src).read("config.json")
    anchor = b'"compile_config": {}' if where == "top" else b'"units": 3'
    return rewrite(src, d / "deep.keras", members={"config.json": text.replace(anchor, anchor + b', "extra": '
                                                                               + _deep(levels), 1)})


def _h5_attr(d, value):
    path = small_dense(d / "m.h5")
    with h5py.File(path, "a") as f:
        f.attrs["model_config"] = value
    return path


def _h5_edit(d, edit):
    path = small_dense(d / "m.h5")
    with h5py.File(path, "a") as f:
        edit(f)
    return path


def _lambda_file(d, suffix=".keras"):
    """A real Lambda layer whose stored code is replaced by code that creates d/MARKER."""
    keras.utils.set_random_seed(0)
    x = keras.Input((4,), name="x")
    src = d / "lam_src.keras"
    keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0, name="double_it")(x)).save(src)

    def plant(config):
        layer_config(config, "double_it")["config"]["function"]["config"]["code"] = lambda_code(d / "MARKER")
    return edit_config(src, d / "lam.keras", plant)


def _activation(d, value):
    def plant(config):
        layer_config(config, "fc")["config"]["activation"] = value
    return edit_config(small_dense(d / "base.keras"), d / "act.keras", plant)


def _custom_module(d, module, class_name, registered=None):
    def plant(config):
        layer = layer_config(config, "fc")
        layer.update({"module": module, "class_name": class_name, "registered_name": registered or class_name})
    return edit_config(small_dense(d / "base.keras"), d / "mod.keras", plant)


def _torch_module_wrapper(d):
    """A TorchModuleWrapper whose stored module is a pickle that creates d/MARKER when torch.load reads it."""
    def plant(config):
        layer = layer_config(config, "fc")
        layer.update({"module": "keras.layers", "class_name": "TorchModuleWrapper", "registered_name": None})
        layer["config"] = {"name": "fc", "module": base64.b64encode(pickle_payload(d / "MARKER")).decode()}
    return edit_config(small_dense(d / "base.keras"), d / "mod.keras", plant)


def _field(d, name, key, value):
    def plant(config):
        layer_config(config, name)[key] = value
    return edit_config(small_dense(d / "base.keras"), d / "field.keras", plant)


def _units(d, units):
    def plant(config):
        layer_config(config, "fc")["config"]["units"] = units
    return edit_config(small_dense(d / "base.keras"), d / "units.keras", plant)


def _input_shape(d, shape):
    """A weightless model (x -> ReLU) whose stored input shape is ``shape``."""
    x = keras.Input((4,), name="x")
    src = d / "relu.keras"
    keras.Model(x, keras.layers.ReLU(name="act")(x)).save(src)

    def plant(config):
        layer_config(config, "x")["config"]["batch_shape"] = shape
    return edit_config(src, d / "shape.keras", plant)


def _bomb(d):
    """model.weights.h5 replaced by 20 MiB of zeros deflated to about 20 KB."""
    src = small_dense(d / "base.keras")
    return rewrite(src, d / "bomb.keras", drop=("model.weights.h5",),
                   extra=[("model.weights.h5", bytes(20 << 20), zipfile.ZIP_DEFLATED)])


def _weights_of_other_model(d):
    other = zipfile.ZipFile(small_dense(d / "five.keras", units=5)).read("model.weights.h5")
    return rewrite(small_dense(d / "base.keras"), d / "mismatch.keras", members={"model.weights.h5": other})


def _truncated_weights(d):
    src = small_dense(d / "base.keras")
    weights = zipfile.ZipFile(src).read("model.weights.h5")
    return rewrite(src, d / "cut.keras", members={"model.weights.h5": weights[: len(weights) // 3]})


def _h5_shape_bomb(f):
    f.create_dataset("model_weights/fc/bomb", shape=(10 ** 6, 10 ** 4), dtype="f4", chunks=(1000, 100),
                     compression="gzip")


def _base(d):
    return small_dense(d / "base.keras")


LAMBDA = r"lam\.keras: Lambda layer double_it holds code .*refused in safe mode.*--unsafe-keras"
CUSTOM = r"layer fc has custom class {} \(module {}\), which is not registered.*cannot name code"
CASES = [  # (id, make(tmp) -> path, extra args, exit code, message regex)
    ("json-100k-deep", lambda d: rewrite(_base(d), d / "deep.keras", members={"config.json": _deep(100_000)}), [],
     2, r"deep\.keras: config\.json is nested more than 256 levels"),
    ("json-deep-top", lambda d: _nested_config(d, 2_000, "top"), [], 2, r"config\.json is nested more than 256"),
    ("json-deep-in-layer", lambda d: _nested_config(d, 300, "layer"), [], 2, r"config\.json is nested more than"),
    ("json-top-is-list", lambda d: rewrite(_base(d), d / "l.keras", members={"config.json": b"[1, 2]"}), [], 2,
     r"l\.keras: config\.json holds an array, expected a JSON object with 'class_name'"),
    ("json-not-utf8", lambda d: rewrite(_base(d), d / "u.keras", members={"config.json": '{"n": "é"}'.encode(
        "latin-1")}), [], 2, r"u\.keras: config\.json is not UTF-8 text"),
    ("json-invalid", lambda d: rewrite(_base(d), d / "j.keras", members={"config.json": b"{'a': 1"}), [], 2,
     r"j\.keras: config\.json is not JSON"),
    ("h5-config-not-json", lambda d: _h5_attr(d, "not json {"), [], 2, r"m\.h5: attribute model_config is not JSON"),
    ("h5-config-integer", lambda d: _h5_attr(d, 5), [], 2, r"m\.h5: attribute model_config holds a number"),
    ("h5-config-array", lambda d: _h5_attr(d, [1, 2, 3]), [], 2, r"model_config holds an array of shape \(3,\)"),
    ("h5-config-json-list", lambda d: _h5_attr(d, "[1, 2]"), [], 2, r"model_config holds an array, expected a JSON"),
    ("h5-config-json-string", lambda d: _h5_attr(d, '"Functional"'), [], 2, r"model_config holds a string"),
    ("h5-config-no-class", lambda d: _h5_attr(d, '{"config": {}}'), [], 2, r"model_config holds an object without"),
    ("h5-config-pickle", lambda d: _h5_attr(d, np.void(pickle_payload(d / "MARKER"))), [], 2,
     r"m\.h5: attribute model_config holds"),
    ("h5-config-deep", lambda d: _h5_attr(d, "[" * 50_000 + "]" * 50_000), [], 2, r"model_config is nested more"),
    ("h5-shape-bomb", lambda d: _h5_edit(d, _h5_shape_bomb), [], 2, r"m\.h5: dataset /model_weights/fc/bomb declares "
     r"shape \(1000000, 10000\).*shape bomb"),
    ("h5-external-link", lambda d: _h5_edit(d, lambda f: f.__setitem__("escape", h5py.ExternalLink("/etc/x", "/"))),
     [], 2, r"m\.h5: HDF5 entry /escape is a link"),
    ("lambda-keras", lambda d: _lambda_file(d), [], 2, LAMBDA),
    ("lambda-activation", lambda d: _activation(d, {"class_name": "__lambda__", "config": {
        "value": lambda_code(d / "MARKER")}}), [], 2, r"act\.keras: layer fc \(a serialized lambda\) holds code "
     r"that loading would run.*--unsafe-keras"),
    ("torch-module-wrapper", _torch_module_wrapper, [], 2,
     r"mod\.keras: TorchModuleWrapper layer fc holds code that loading would run"),
    ("tfsm-layer", lambda d: _custom_module(d, "keras.layers", "TFSMLayer"), [], 2, r"TFSMLayer layer fc holds code"),
    ("module-os-system", lambda d: _custom_module(d, "os", "system"), [], 2, CUSTOM.format("system", "os")),
    ("module-subprocess", lambda d: _custom_module(d, "subprocess", "Popen"), [], 2,
     CUSTOM.format("Popen", "subprocess")),
    ("module-builtins-eval", lambda d: _custom_module(d, "builtins", "eval"), [], 2, CUSTOM.format("eval", "builtins")),
    ("registered-os-system", lambda d: _custom_module(d, "os", "Dense", "os>system"), [], 2,
     CUSTOM.format("Dense", "os")),
    ("registered-on-builtin", lambda d: _field(d, "fc", "registered_name", "builtins>eval"), [], 2,
     r"field\.keras: Keras could not load the model"),
    ("function-builtins-eval", lambda d: _activation(d, {"module": "builtins", "class_name": "function",
                                                         "config": "eval", "registered_name": None}), [], 2,
     r"act\.keras: Keras could not load the model .*eval"),
    ("class-name-not-string", lambda d: _field(d, "fc", "class_name", ["Dense"]), [], 2,
     r"field\.keras: layer fc: field class_name is an array, expected a string.*edited or damaged"),
    ("unknown-keras-class", lambda d: _field(d, "fc", "class_name", "NoSuchLayer"), [], 2,
     r"layer fc has custom class NoSuchLayer, which is not registered"),
    ("zip-traversal", lambda d: rewrite(_base(d), d / "t.keras", extra=[("../evil", b"x")]), [], 2,
     r"t\.keras: archive member '\.\./evil' has an unsafe name"),
    ("zip-absolute", lambda d: rewrite(_base(d), d / "a.keras", extra=[("/tmp/evil", b"x")]), [], 2,
     r"archive member '/tmp/evil' has an unsafe name"),
    ("zip-assets-traversal", lambda d: rewrite(_base(d), d / "a.keras", extra=[("assets/../../evil", b"x")]), [], 2,
     r"unsafe name"),
    ("zip-duplicate-config", lambda d: rewrite(_base(d), d / "dup.keras", extra=[("config.json", b"{}")]), [], 2,
     r"dup\.keras: archive member 'config\.json' appears twice"),
    ("zip-unexpected-member", lambda d: rewrite(_base(d), d / "x.keras", extra=[("payload.pkl", b"x")]), [], 2,
     r"x\.keras: unexpected archive member 'payload\.pkl'"),
    ("zip-bomb", _bomb, [], 2, r"bomb\.keras: archive member 'model\.weights\.h5' declares 20971520 bytes.*bomb"),
    ("zip-no-config", lambda d: rewrite(_base(d), d / "n.keras", drop=("config.json",)), [], 2,
     r"n\.keras: not a readable \.keras archive \(no config\.json"),
    ("weights-missing", lambda d: rewrite(_base(d), d / "w.keras", drop=("model.weights.h5",)), [], 2,
     r"w\.keras: Keras could not load the model"),
    ("weights-truncated", _truncated_weights, [], 2, r"cut\.keras: Keras could not load the model"),
    ("weights-shape-mismatch", _weights_of_other_model, [], 2, r"mismatch\.keras: Keras could not load the model "
     r"\(ValueError: .*object <Dense name=fc.*: The shape of the target variable"),
    ("units-2-to-62", lambda d: _units(d, 2 ** 62), [], 2, r"units\.keras: weight fc/kernel has shape "
     r"\(4, 4611686018427387904\).*the file stores"),
    ("units-billion", lambda d: _units(d, 10 ** 9), [], 2, r"weight fc/kernel has shape \(4, 1000000000\)"),
    ("input-zero-dim", lambda d: _input_shape(d, [None, 0]), [], 2,
     r"shape\.keras: Keras input x: shape \(1, 0\) has a dimension below 1"),
    ("input-negative-dim", lambda d: _input_shape(d, [None, -4]), [], 2, r"shape\.keras: Keras could not load the "
     r"model \(TypeError: Cannot convert '\(None, -4\)' to a shape"),
    ("input-1e15-elements", lambda d: _input_shape(d, [None, 10 ** 15]), [], 2,
     r"shape\.keras: Keras input x: shape \(1, 1000000000000000\) has 1e\+15 elements"),
    ("cli-input-1e15", _base, ["--input", "x:1000000x1000000000"], 2, r"1e\+15 elements"),
    ("cli-input-float16", _base, ["--input", "x:2x4:float16"], 2, r"base\.keras: --input x: dtype float16 given, "
     r"but the Keras model's input x is float32 \(the model computes in float32\)"),
    ("cli-input-float16-h5", lambda d: small_dense(d / "m.h5"), ["--input", "x:2x4:float16"], 2,
     r"--input x: dtype float16 given"),
    ("cli-input-fixed-dim", _base, ["--input", "x:2x5"], 2, r"--input x: shape \(2, 5\) does not fit the Keras "
     r"model's input x of shape \(None, 4\)"),
    ("cli-input-rank", _base, ["--input", "x:2x4x1"], 2, r"does not fit"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_keras_file(tmp_path, monkeypatch, case):
    _, make, extra, code, message = case
    monkeypatch.chdir(tmp_path)
    src, out = make(tmp_path), tmp_path / "out"
    before = sorted(p.name for p in tmp_path.iterdir())
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out), *extra])
    assert run.exit_code == code, run.output
    line = one_error_line(run.output)
    assert re.search(message, line), line
    assert not out.exists() and not (tmp_path / "MARKER").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing extracted or left behind



def test_lambda_payload_is_live_and_runs_only_with_unsafe_keras(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src, out = _lambda_file(tmp_path), tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out)])
    assert run.exit_code == 2 and not (tmp_path / "MARKER").exists(), run.output
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out), "--unsafe-keras"])
    assert (tmp_path / "MARKER").exists()  # the payload is real: the user's flag, and only it, lets it run
    assert run.exit_code == 0, run.output  # trusted, the Lambda is traced (Note [keras composite layers])
    assert "MARKER" not in (out / "model.py").read_text()  # the emitted model holds its ops, not its code


def test_h5_pickle_in_training_config_is_never_loaded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = _h5_edit(tmp_path, lambda f: f.attrs.__setitem__("training_config",
                                                             np.void(pickle_payload(tmp_path / "MARKER"))))
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(tmp_path / "out")])
    assert run.exit_code == 0, run.output
    assert not (tmp_path / "MARKER").exists()


EVIL_NAMES = ["x\r\n__import__('os').system('touch MARKER')", "'''", '"""', "a\\", "}{", "%s%n", "$(touch MARKER)",
              "`touch MARKER`", "# comment", "__builtins__", "__class__", "def", "return", "Model", "os", "sys",
              "load_file", "nn.Module", "\u202eevil", "0x10", "..", "  "]


def _evil_names(path):
    keras.utils.set_random_seed(0)
    x = keras.Input((6,), name="x\n__import__('os').system('touch MARKER')#")
    y = x
    for i, name in enumerate(EVIL_NAMES):
        y = keras.layers.Dense(6, name=name)(y) if i % 2 == 0 else keras.layers.Activation("tanh", name=name)(y)
    keras.Model(x, y).save(path)
    return path


def test_hostile_layer_names_reach_model_py_only_as_safe_identifiers(tmp_path, monkeypatch):
    import io
    import tokenize

    monkeypatch.chdir(tmp_path)  # an injected `touch MARKER` would land here
    src, out = _evil_names(tmp_path / "names.keras"), tmp_path / "out"
    run = CliRunner().invoke(main, ["convert", str(src), "--to", "torch-xla", "-o", str(out)])
    assert run.exit_code == 0, run.output
    code = (out / "model.py").read_text(encoding="utf-8")
    tree = ast.parse(code)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    plan = {"Replicate", "ColwiseParallel", "RowwiseParallel"}  # tp_plan()'s lazy torch.distributed imports
    assert imported <= {"os", "torch", "nn", "F", "load_file", "torch.nn.functional"} | plan, imported
    tokens = {t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.NAME}
    assert not tokens & {"__import__", "system", "exec", "__builtins__", "__class__", "touch"}, tokens
    assert "eval" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}  # model.eval() is fine
    run = CliRunner().invoke(main, ["verify", str(src), str(out)])
    assert run.exit_code == 0, run.output
    assert not list(tmp_path.glob("MARKER*"))


def test_float16_examples_for_a_float32_model_are_named(tmp_path):
    import portx
    from portx.errors import BadInput
    from portx.frontends.keras.files import from_keras_model

    keras.utils.set_random_seed(0)
    x = keras.Input((4,), name="x")
    model = keras.Model(x, keras.layers.Dense(3, name="fc")(x))
    with pytest.raises(BadInput, match=r"--input x: dtype float16 given, but the Keras model's input x is float32"):
        from_keras_model(model, example_inputs=(np.zeros((2, 4), np.float16),))
    assert from_keras_model(model, example_inputs=(np.zeros((2, 4)),)).input_types[0].shape == (2, 4)  # float64 ok

    class Sub(keras.Model):
        def __init__(self):
            super().__init__(name="sub")
            self.fc = keras.layers.Dense(3)

        def call(self, x):
            return self.fc(x)

    with pytest.raises(BadInput, match=r"example input 0: dtype float16 given, but Keras model sub computes in "
                                       r"float32") as err:
        portx.convert(Sub(), example_inputs=(np.zeros((2, 4), np.float16),), to="torch-xla", out=tmp_path / "o")
    assert err.value.exit_code == 2 and not (tmp_path / "o").exists()
    result = portx.convert(Sub(), example_inputs=(np.ones((2, 4), np.int32),), to="torch-xla", out=tmp_path / "i")
    assert result.report["verification"]["passed"] is True  # an int input promoted as JAX promotes it


def _chain(layers, sequential=False):
    """x -> Dense(4) -> tanh -> Dense(4) -> ... (``layers`` layers; orthogonal weights keep the values alive)."""
    keras.utils.set_random_seed(0)
    init = keras.initializers.Orthogonal(gain=1.2)
    stack = [keras.layers.Dense(4, kernel_initializer=init, name=f"d{i}") if i % 2 == 0
             else keras.layers.Activation("tanh", name=f"t{i}") for i in range(layers)]
    if sequential:
        return keras.Sequential([keras.Input((4,), name="x")] + stack)
    x = y = keras.Input((4,), name="x")
    for layer in stack:
        y = layer(y)
    return keras.Model(x, y)


@pytest.mark.parametrize("layers,sequential", [
    pytest.param(1100, False, id="functional-1100-layers"),
    pytest.param(2000, False, id="functional-2000-layers", marks=pytest.mark.slow),
    pytest.param(2000, True, id="sequential-2000-layers", marks=pytest.mark.slow),
])
def test_deep_models_convert(tmp_path, layers, sequential):
    """Keras maps a graph with one Python frame per layer of depth, so a chain of more than about 950 layers
    ended in RecursionError (exit 70); portx makes room (Note [keras load guards])."""
    limit, path, out = sys.getrecursionlimit(), tmp_path / "deep.keras", tmp_path / "out"
    sys.setrecursionlimit(20_000)  # Keras itself needs it to build the model in this test
    try:
        _chain(layers, sequential).save(path)
    finally:
        sys.setrecursionlimit(limit)
    run = CliRunner().invoke(main, ["convert", str(path), "--to", "torch-xla", "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert json.loads((out / "report.json").read_text())["verification"]["passed"] is True
    assert sys.getrecursionlimit() == limit


def test_sequential_files_load_in_linear_time(tmp_path):
    """Keras' Sequential.from_config rebuilt the graph after every layer (quadratic: 70 s for 400 layers) and
    left one stale inbound node per rebuild on each layer; portx rebuilds once."""
    from portx.frontends.keras.files import load_keras_source

    _chain(400, sequential=True).save(tmp_path / "seq.keras")
    model = load_keras_source(tmp_path / "seq.keras").model
    assert len(model.layers) == 400
    assert all(len(layer._inbound_nodes) == 1 for layer in model.layers)
