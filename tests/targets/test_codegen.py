"""Namespace and literal: untrusted names and data become safe Python source (Note [untrusted names])."""
import ast
import builtins
import keyword
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from portx.targets.codegen import LineWriter, Namespace, literal

HOSTILE = [
    "layer1.0.conv1",
    "it's",
    'say "hi"',
    "a\nb",
    "line\r\nbreak",
    "back\\slash",
    "__import__('os').system('touch X')",
    "'); import os; os.system('x'); ('",
    "__class__",
    "import",
    "class",
    "lambda",
    "None",
    "True",
    "match",
    "_",
    "print",
    "len",
    "input",
    "float",
    "ñandú",
    "层.权重",
    "🙂",
    "",
    "   ",
    "123abc",
    "0",
    "x" * 500,
    "x" * 500 + "y",
    "conv",
    "conv",
    "Conv",
    "keras",
]


def _safe(name: str) -> bool:
    return (name.isidentifier() and name.isascii() and not keyword.iskeyword(name)
            and not keyword.issoftkeyword(name) and name not in dir(builtins) and not name.startswith("__"))


def test_namespace_makes_safe_unique_identifiers():
    ns = Namespace(reserved={"keras"})
    names = [ns.name(raw) for raw in HOSTILE]
    assert len(set(names)) == len(names), names
    for raw, name in zip(HOSTILE, names):
        assert _safe(name) and name != "keras", (raw, name)
        assert len(name) <= 60, name
        ast.parse(f"{name} = 1")


def test_namespace_readable_results():
    ns = Namespace()
    assert ns.name("layer1.0.conv1") == "layer1_0_conv1"
    assert ns.name("layer1.0.conv1") == "layer1_0_conv1_1"
    assert ns.name("", "const") == "const"
    assert ns.name("7up", "v") == "v_7up"
    assert ns.name("print") == "print_1"
    assert ns.name("x" * 500) == "x" * 48
    assert ns.name("y" * 500, room=2) == "y" * 50  # a longer block prefix (Note [names in longer blocks])


def test_namespace_code_injection_is_inert(tmp_path):
    ns = Namespace()
    target = tmp_path / "X"
    name = ns.name(f"__import__('os').system('touch {target}')")
    exec(compile(f"{name} = 1", "<generated>", "exec"), {})
    assert not target.exists() and "(" not in name and "'" not in name


@given(st.lists(st.text(max_size=60), max_size=20))
def test_namespace_property(raws):
    ns = Namespace(reserved={"ops", "layers"})
    names = [ns.name(raw) for raw in raws]
    assert len(set(names)) == len(names)
    assert all(_safe(n) and n not in ("ops", "layers") for n in names)


PLAIN = [None, True, False, 0, -3, 2**70, 1.5, -0.0, 1e-300, "", "it's \"quoted\"\n\\", "层", (), (1,), (1, 2),
         [1, [2.5, "a"]], ((0, 0), (1, 2)), np.float32(0.25), np.int64(7), np.bool_(True)]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_literal_round_trips(value):
    text = literal(value)
    back = ast.literal_eval(text)
    plain = value.item() if isinstance(value, np.generic) else value
    assert back == plain and type(back) is type(plain)


@pytest.mark.parametrize("value, check", [(float("nan"), math.isnan), (float("inf"), lambda v: v == math.inf),
                                          (float("-inf"), lambda v: v == -math.inf)])
def test_literal_non_finite_floats(value, check):
    # Not literal_eval-able, but plain calls of the builtin float (never shadowed: see Namespace).
    assert check(eval(literal(value), {"__builtins__": {"float": float}}))


@pytest.mark.parametrize("value", [complex(1.5, -2.0), complex(float("inf"), float("nan")), 1j])
def test_literal_complex_is_a_call_of_the_builtin_complex(value):
    back = eval(literal(value), {"__builtins__": {"float": float, "complex": complex}})
    assert type(back) is complex and repr(back) == repr(value)


@pytest.mark.parametrize("value", [object(), {"a": 1}, {1, 2}, b"bytes", np.zeros(3), print, type,
                                   (1, object()), [np.zeros(2)]], ids=lambda v: type(v).__name__)
def test_literal_rejects_non_plain_data(value):
    with pytest.raises(TypeError, match="cannot write .* as a literal in generated code"):
        literal(value)


plain_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple), max_leaves=12)


@given(plain_data)
def test_literal_property(value):
    back = ast.literal_eval(literal(value))
    assert back == value and repr(back) == repr(value)


def test_line_writer_indents():
    w = LineWriter()
    w.line("def f():")
    w.indent = 1
    w.line("return 1")
    w.line()
    assert w.text() == "def f():\n    return 1\n\n"


def test_dropped_dropout_is_named_in_a_comment_and_the_docstring_both_ways(tmp_path):
    """With --inference, torch Dropout -> Keras and Keras Dropout -> torch: the line it followed and the
    docstring say so."""
    import ast

    import keras
    import torch
    from torch import nn

    import portx

    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4, 2)).eval()
    portx.convert(module, example_inputs=(torch.randn(2, 8),), to="keras-jax", out=tmp_path / "k", inference=True)
    code = (tmp_path / "k" / "model.py").read_text()
    assert "Dropped as identities at inference: 2 (Dropout)." in ast.get_docstring(ast.parse(code))
    assert [line for line in code.splitlines() if line.endswith("# 2 (Dropout) dropped after")]

    inputs = keras.Input((8,))
    hidden = keras.layers.Dropout(0.3, name="drop")(keras.layers.Dense(4, name="fc")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(hidden))
    portx.convert(model, to="torch-xla", out=tmp_path / "t", inference=True)
    code = (tmp_path / "t" / "model.py").read_text()
    assert "Dropped as identities at inference: drop (Dropout)." in ast.get_docstring(ast.parse(code))
    assert re.search(r"\n        fc = self\.fc\(\w+\)  # drop \(Dropout\) dropped after\n", code)
