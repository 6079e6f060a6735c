"""Fuzzer: random mutations of a saved ``.keras`` model's config.json, converted through the CLI in-process.

Whatever the mutation, portx answers with exit 0, 1, 2 or 3 and no traceback, never runs a payload, and leaves
no OUT behind on failure. CI runs the "ci" hypothesis profile (a few derandomized examples); ``PORTX_FUZZ=1``
runs 1,000 random examples. ``REGRESSIONS`` holds one mutation per cause of exit 70 (or of a crashed process)
that a 1,000-mutation campaign found before the Keras frontend checked its files (Note [keras archive checks]).
"""
import json
import re
import shutil
import zipfile

import keras
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portx.cli import main
from tests.support.fuzz_budget import examples
from tests.support.keras_hostile import lambda_code, layer_config, rewrite, small_cnn
from tests.support.pt2_hostile import mutate

DEEP = re.compile(rb'"DEEP:(\d+)"')
CLASS_NAMES = ["Lambda", "__lambda__", "__numpy__", "__tensor__", "__keras_tensor__", "function", "system", "eval",
               "Functional", "Sequential", "InputLayer", "Dense", "NoSuchLayer", "TFOpLambda", "Bidirectional"]
MODULES = ["os", "subprocess", "builtins", "posix", "pickle", "keras", "keras.layers", "keras.src.utils.python_utils",
           "keras.src.saving.serialization_lib", "keras.src.backend.tensorflow", "keras_hub.models", "__main__"]
REGISTERED = ["os>system", "builtins>eval", "subprocess>Popen", "Custom>Thing", ">", "", "Functional", "keras>Dense"]


def _small_sequential(path):
    keras.utils.set_random_seed(0)
    keras.Sequential([keras.Input((6,), name="v"), keras.layers.Dense(4, activation="relu", name="d1"),
                      keras.layers.Dropout(0.1, name="drop"), keras.layers.Dense(2, name="d2")], name="seq").save(path)
    return path


def _padded(path):
    keras.utils.set_random_seed(0)
    x = keras.Input((8, 8, 2), name="pic")
    y = keras.layers.Conv2D(2, 3, name="conv")(keras.layers.ZeroPadding2D(1, name="pad")(x))
    keras.Model(x, y, name="padded").save(path)
    return path


def base_models(folder):
    """The three saved models the mutations start from (a CNN, a Sequential, a padded conv), built in ``folder``."""
    return [small_cnn(folder / "cnn.keras"), _small_sequential(folder / "seq.keras"), _padded(folder / "pad.keras")]


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    return base_models(tmp_path_factory.mktemp("keras_fuzz"))


def _paths(doc, prefix=()):
    """Every path in a JSON document, containers included."""
    yield prefix
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield from _paths(value, prefix + (key,))


def hostile_values(marker):
    """Values a mutation writes: wrong types, extreme numbers, code-bearing objects, deep nesting (a placeholder)."""
    lam = {"module": "keras.layers", "class_name": "Lambda", "registered_name": None, "config": {
        "name": "lam", "function": {"class_name": "__lambda__", "config": {
            "code": lambda_code(marker), "defaults": None, "closure": None}}, "arguments": {}}}
    return st.one_of(
        st.sampled_from([lam, {"class_name": "__lambda__", "config": {"value": lambda_code(marker)}},
                         {"module": "builtins", "class_name": "function", "config": "eval", "registered_name": None},
                         {"module": "os", "class_name": "system", "config": {}, "registered_name": "os>system"},
                         "DEEP:300", "DEEP:5000", "DEEP:100000", "string", "float16", "channels_first", "causal",
                         [None, 0], [None, -4], [2 ** 62, 4], [], {}]),
        st.sampled_from(CLASS_NAMES + MODULES + REGISTERED), st.text(max_size=8),
        st.integers(min_value=-2 ** 70, max_value=2 ** 70), st.sampled_from([0, -1, 1, 2, 3, 10 ** 9, 2 ** 62]),
        st.floats(allow_nan=True), st.none(), st.booleans(), st.lists(st.integers(-3, 9), max_size=4))


def convert(src, doc, workdir):
    """Write ``doc`` as the config.json of a copy of ``src`` and convert it; returns the CliRunner result."""
    data = DEEP.sub(lambda m: b'{"x":' * int(m.group(1)) + b"1" + b"}" * int(m.group(1)), json.dumps(doc).encode())
    path = rewrite(src, workdir / "m.keras", members={"config.json": data})
    shutil.rmtree(workdir / "out", ignore_errors=True)
    return CliRunner().invoke(main, ["convert", str(path), "--to", "torch-xla", "-o", str(workdir / "out"),
                                     "--no-verify"])


def check(run, workdir):
    assert run.exit_code in (0, 1, 2, 3), run.output
    assert "Traceback" not in run.output and "internal error" not in run.output, run.output
    assert not (workdir / "MARKER").exists()
    assert run.exit_code in (0, 1) or not (workdir / "out").exists()


def fuzz_config(data, workdir, bases):
    """One draw: one to three mutations of a base model's config.json, converted (the test's body, and
    scripts/fuzz_campaign.py's ``keras-config``); returns the CliRunner result."""
    src = data.draw(st.sampled_from(bases), label="model")
    doc = json.loads(zipfile.ZipFile(src).read("config.json"))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        paths = list(_paths(doc))
        path = paths[data.draw(st.integers(0, 10_000), label="path index") % len(paths)]
        doc = mutate(doc, path, data.draw(hostile_values(workdir / "MARKER"), label="value"),
                     delete=bool(path) and data.draw(st.booleans(), label="delete"))
        if not isinstance(doc, (dict, list)):
            break
    return convert(src, doc, workdir)


@settings(max_examples=examples(floor=40),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_keras_config_never_crashes_or_runs_code(tmp_path, bases, data):
    check(fuzz_config(data, tmp_path, bases), tmp_path)


def _set(name, *keys, value):
    """An edit that sets ``layer[name][keys...] = value``."""
    def edit(doc):
        target = layer_config(doc, name)
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return edit


def _top(key, value):
    def edit(doc):
        doc["config"][key] = value
    return edit


REGRESSIONS = [  # (id, base index, edit, message): each ended in exit 70 or a killed process before
    ("json-100000-deep-in-layer", 0, _set("conv", "config", "extra", value="DEEP:100000"), r"nested more than 256"),
    ("json-2000-deep-at-top", 1, _top("extra", "DEEP:2000"), r"nested more than 256"),
    ("dtype-policy-class-name-int", 0, _set("conv", "config", "dtype", "class_name", value=7),
     r"layer conv: field class_name is a number"),
    ("layer-class-name-null", 0, _set("bn", "class_name", value=None), r"layer bn: field class_name is null"),
    ("layer-class-name-dict", 1, lambda doc: doc["config"]["layers"][1].update(class_name={"a": 1}),
     r"layer d1: field class_name is an object"),
    ("input-dtype-string", 0, _set("img", "config", "dtype", value="string"), r"Keras input img: dtype string"),
    ("units-2-to-62-abort", 1, lambda doc: doc["config"]["layers"][3]["config"].update(units=2 ** 62),
     r"weight d2/kernel has shape \(4, 4611686018427387904\)"),
    ("build-channels-2-to-62-abort", 0, _set("bn", "build_config", "input_shape", value=[None, 8, 8, 2 ** 62]),
     r"weight bn/gamma has shape \(4611686018427387904,\)"),
    ("build-shape-2-to-62-abort", 1, lambda doc: doc["config"]["layers"][3]["build_config"].update(
        input_shape=[None, 2 ** 62]), r"weight d2/kernel has shape \(4611686018427387904, 2\)"),
    ("padding-1e30-ir-shape", 2, _set("pad", "config", "padding", value=[[1, 1], 10 ** 30]),
     r"layer pad \(ZeroPadding2D\): output shape \(1, 10, 2000000000000000000000000000008, 2\) has more than"),
]


@pytest.mark.parametrize("case", REGRESSIONS, ids=[c[0] for c in REGRESSIONS])
def test_campaign_regressions(tmp_path, bases, case):
    _, base, edit, message = case
    doc = json.loads(zipfile.ZipFile(bases[base]).read("config.json"))
    edit(doc)
    run = convert(bases[base], doc, tmp_path)
    check(run, tmp_path)
    assert run.exit_code == 2 and re.search(message, run.output), run.output


@pytest.mark.parametrize("rate", [True, 1.0])
def test_a_dropout_rate_of_one_converts(tmp_path, bases, rate):
    """A campaign's exit 70 (2026-12-06): ``rate: true`` (1.0) failed the IR's dropout shape rule, which allowed
    [0, 1); Keras and torch both take a rate of 1 (every element zeroed while training), so portx does too."""
    doc = json.loads(zipfile.ZipFile(bases[1]).read("config.json"))
    _set("drop", "config", "rate", value=rate)(doc)
    run = convert(bases[1], doc, tmp_path)
    check(run, tmp_path)
    assert run.exit_code == 0 and "nn.Dropout(1.0)" in (tmp_path / "out" / "model.py").read_text(), run.output
