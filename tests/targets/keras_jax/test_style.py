"""How the written model.py reads: Keras defaults left out, named layers where they compute the same,
Black-like wrapping at 100 columns, and layer names that never clash with Keras's auto names."""
import ast
import textwrap

import numpy as np
import pytest

import portx  # noqa: F401  (registers ops)
from portx.ir import parse_graph, validate
from portx.targets.codegen import import_by_path
from portx.targets.keras_jax.emitter import emit_keras
from portx.targets.keras_jax.style import auto_names_in, layer_args
from portx.targets.linewrap import wrap_line
from portx.verification.compare import compare_arrays, make_inputs, run_reference


@pytest.mark.parametrize("cls, kwargs, expected", [
    ("Conv2D", {"filters": 16, "kernel_size": (3, 3), "strides": (1, 1), "padding": "valid", "dilation_rate": (1, 1),
                "use_bias": True, "data_format": "channels_last"}, ["16", "3"]),
    ("Conv1D", {"filters": 4, "kernel_size": (3,), "strides": (2,), "use_bias": False, "data_format": "channels_first"},
     ["4", "3", "strides=2", "use_bias=False", "data_format='channels_first'"]),
    ("Conv2D", {"filters": 8, "kernel_size": (1, 3), "dilation_rate": (2, 1)}, ["8", "(1, 3)", "dilation_rate=(2, 1)"]),
    ("DepthwiseConv2D", {"depth_multiplier": 1, "kernel_size": (3, 3), "padding": "same"}, ["3", "padding='same'"]),
    ("Dense", {"units": 10, "use_bias": True}, ["10"]),
    ("MaxPooling2D", {"pool_size": (2, 2), "strides": (2, 2), "padding": "valid"}, ["2"]),
    ("AveragePooling2D", {"pool_size": (3, 3), "strides": (2, 2)}, ["3", "strides=2"]),
    ("GlobalAveragePooling2D", {"keepdims": False, "data_format": "channels_last"}, []),
    ("ZeroPadding2D", {"padding": ((1, 1), (1, 1))}, ["1"]),
    ("ZeroPadding2D", {"padding": ((1, 1), (2, 2))}, ["(1, 2)"]),
    ("ZeroPadding2D", {"padding": ((0, 1), (1, 0))}, ["((0, 1), (1, 0))"]),
    ("ZeroPadding1D", {"padding": (2, 2)}, ["2"]),
    ("ZeroPadding1D", {"padding": (1, 2)}, ["(1, 2)"]),
    ("LayerNormalization", {"axis": -1, "epsilon": 1e-05, "center": True, "scale": True}, ["epsilon=1e-05"]),
    ("BatchNormalization", {"axis": 1, "epsilon": 1e-3, "center": False}, ["axis=1", "center=False"]),
    ("Softmax", {"axis": -1}, []),
    ("ReLU", {}, []),
    ("ReLU", {"max_value": 6.0}, ["6.0"]),
    ("LeakyReLU", {"negative_slope": 0.01}, ["negative_slope=0.01"]),
    ("Activation", {"activation": "gelu"}, ["'gelu'"]),
    ("Embedding", {"input_dim": 50, "output_dim": 8}, ["50", "8"]),
    ("Conv2DTranspose", {"filters": 4, "kernel_size": (3, 3), "strides": (2, 2), "output_padding": (0, 0)},
     ["4", "3", "strides=2", "output_padding=0"]),  # output_padding=None would differ: kept
])
def test_layer_args_leave_out_keras_defaults(cls, kwargs, expected):
    assert layer_args(cls, kwargs) == expected


def test_auto_names_cover_ops_operators_and_subscripts():
    body = "    a = ops.softmax(x[:, 0] * 2.0, axis=-1)\n    b = ops.batch_normalization(a, m, v, axis=1)\n"
    assert auto_names_in(body) == {"softmax", "get_item", "multiply", "batch_norm", "negative"}


def test_wrap_line_black_style():
    assert wrap_line("    y = f(a)", 100) == ["    y = f(a)"]
    assert wrap_line("    y = layers.Conv2D(16, 3, name='y')(x)", 30) == [
        "    y = layers.Conv2D(", "        16, 3, name='y'", "    )(x)"]
    assert wrap_line("    y = layers.Add(name='y')([aaaaaaaa, bbbbbbbb])", 40) == [
        "    y = layers.Add(name='y')(", "        [aaaaaaaa, bbbbbbbb]", "    )"]
    assert wrap_line("    y = ops.f(aaaaaaaaaa, bbbbbbbbbb, cccccccccc)", 30) == [
        "    y = ops.f(", "        aaaaaaaaaa,", "        bbbbbbbbbb,", "        cccccccccc,", "    )"]
    assert wrap_line("def block(x, rotary_cos, rotary_sin, name):", 40) == [  # a block function's header
        "def block(", "    x, rotary_cos, rotary_sin, name", "):"]
    comprehension = "    y = ops.stack([t[:, i] for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)])"
    for width in range(20, 60):  # never a trailing comma after a comprehension: the same code at any width
        lines = wrap_line(comprehension, width)
        assert ast.dump(ast.parse(textwrap.dedent("\n".join(lines)))) == ast.dump(ast.parse(comprehension.strip()))


def _emit(tmp_path, text):
    graph = validate(parse_graph(text))
    tmp_path.mkdir(parents=True, exist_ok=True)
    emit_keras(graph, tmp_path)
    code = (tmp_path / "model.py").read_text()
    arrays = make_inputs(graph, 0)
    model = import_by_path(tmp_path / "model.py").load_model()
    got = model(arrays if len(arrays) > 1 else arrays[0])
    got = got if isinstance(got, (list, tuple)) else [got]
    want = run_reference(graph, arrays)
    for value, have in zip(graph.outputs, got):
        tol = 1e-3 if value.type.dtype == "float16" else 1e-6
        row = compare_arrays(want[value], np.asarray(have), tol, tol)
        assert row["passed"], (value.name, row)
    return code, model


def test_merge_layers_only_where_keras_takes_the_shapes(tmp_path):
    code, model = _emit(tmp_path, """
graph model(%x: float32[2x3x4], %y: float32[1x3x4], %z: float32[2x1x4], %w: float32[4]) {
  %same: float32[2x3x4] = add(%x, %x) {}
  %inner: float32[2x3x4] = mul(%x, %z) {}
  %batch: float32[2x3x4] = sub(%x, %y) {}
  %rank: float32[2x3x4] = add(%x, %w) {}
  return %same, %inner, %batch, %rank
}""")
    assert "layers.Add(name='same')([x, x])" in code and "layers.Multiply(name='inner')([x, z])" in code
    assert "batch = ops.subtract(x, y)" in code and "rank = ops.add(x, w)" in code
    assert model.get_layer("inner").output.shape == (2, 3, 4)


def test_activation_layers_are_float32_only(tmp_path):
    code, model = _emit(tmp_path, """
graph model(%x: float32[2x4], %h: float16[2x4]) {
  %a: float32[2x4] = gelu(%x) {approximate='none'}
  %b: float32[2x4] = gelu(%x) {approximate='tanh'}
  %c: float32[2x4] = clamp(%x) {min=0.0, max=6.0}
  %d: float16[2x4] = sigmoid(%h) {}
  return %a, %b, %c, %d
}""")
    assert "layers.Activation('gelu', name='a')" in code and "ops.gelu(x, approximate=True)" in code
    assert "layers.ReLU(6.0, name='c')" in code and "d = ops.sigmoid(h)" in code
    assert model.outputs[3].dtype == "float16"


def test_layer_names_clash_with_keras_auto_names_only_when_the_op_is_called(tmp_path):
    # Note [layer names]: ``ops.relu`` below is auto-named relu, relu_1...; a ReLU layer named relu may clash
    code, _ = _emit(tmp_path / "clash", """
graph model(%x: float32[2x4], %h: float16[2x4]) {
  %relu: float32[2x4] = relu(%x) {}
  %r16: float16[2x4] = relu(%h) {}
  return %relu, %r16
}""")
    assert "layers.ReLU(name='relu_layer')(x)" in code and "ops.relu(h)" in code
    code, _ = _emit(tmp_path / "free", """
graph model(%x: float32[2x4]) {
  %relu: float32[2x4] = relu(%x) {}
  return %relu
}""")
    assert "relu = layers.ReLU(name='relu')(x)" in code


def test_an_input_named_like_an_ops_auto_name_never_clashes(tmp_path):
    # Note [layer names]: a streaming segment's input is named after the value crossing into it (``add_14``);
    # with Keras' process-wide counter at that name, the body's op gets the same name (``ops.relu``: relu_3)
    import keras

    while keras.backend.get_uid("relu") < 3:  # the next auto name of ops.relu is relu_3
        pass
    code, _ = _emit(tmp_path, """
graph model(%relu_3: float16[2x4]) {
  %y: float16[2x4] = relu(%relu_3) {}
  return %y
}""")
    assert "name='relu_3_layer'" in code and "ops.relu(relu_3_layer)" in code


def test_flatten_layer_for_a_reshape_that_keeps_only_the_batch_axis(tmp_path):
    code, _ = _emit(tmp_path, """
graph model(%x: float32[2x3x4x5]) {
  %flat: float32[2x60] = reshape(%x) {shape=(2, 60)}
  %rows: float32[6x20] = reshape(%x) {shape=(6, 20)}
  return %flat, %rows
}""")
    assert "flat = layers.Flatten(name='flat')(x)" in code and "rows = ops.reshape(x, (6, 20))" in code
    assert 'keras.config.set_image_data_format("channels_last")' in code  # Flatten's order depends on it


def test_folded_batch_norm_is_named_in_a_comment_and_the_docstring_safely(tmp_path):
    from portx.passes.fold import fold_batch_norm

    graph = validate(parse_graph("""
graph model(%x: float32[1x3x6x6]) {
  param %w: float32[4x3x3x3]
  param %m: float32[4]
  param %v: float32[4]
  %c: float32[1x4x4x4] = conv(%x, %w, _) {dilation=(1, 1), groups=1, pads=((0, 0), (0, 0)), stride=(1, 1)}  # c
  %y: float32[1x4x4x4] = batch_norm(%c, _, _, %m, %v) {eps=1e-05}  # bn
  return %y
}""", {"v": np.ones(4, np.float32)}))
    hostile = 'bn"""\nimport os; os.system("x")  # '
    graph = graph.replace(nodes=(graph.nodes[0], graph.nodes[1].replace(scope=hostile)))
    folded = fold_batch_norm(graph)
    emit_keras(folded, tmp_path)
    code = (tmp_path / "model.py").read_text()
    tree = ast.parse(code)
    assert "BatchNorm folded into the preceding convolutions: bn_import_os_os.system_x." in ast.get_docstring(tree)
    assert "    # bn_import_os_os.system_x (BN) folded in\n    c = layers.Conv2D(4, 3, data_format=" in code
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import) and n.names[0].name == "os" and n.col_offset]


def test_names_follow_scopes_a_module_result_takes_the_bare_scope(tmp_path):
    code, model = _emit(tmp_path, """
graph model(%x: float32[1x4]) {
  %a: float32[1x4] = relu(%x) {}  # block.act
  %b: float32[1x4] = neg(%a) {}  # block
  %c: float32[1x4] = relu(%b) {}  # block.act
  %d: float32[1x4] = add(%c, %x) {}  # block
  %e: float32[1x4] = relu(%d) {}  # relu
  %f: float32[1x4] = relu(%e) {}  # relu
  return %f
}""")
    for line in ("block_act_relu = layers.ReLU(name='block_act_relu')(x)",
                 "block_neg = ops.negative(block_act_relu)",  # not the last node of block: op named
                 "block_act = layers.ReLU(name='block_act')(block_neg)",  # block.act's result
                 "block = layers.Add(name='block')([block_act, x])",  # block's result
                 "relu = layers.ReLU(name='relu')(block)", "relu_1 = layers.ReLU(name='relu_1')(relu)"):
        assert line in code
    assert model.get_layer("block").output.shape == (1, 4)
