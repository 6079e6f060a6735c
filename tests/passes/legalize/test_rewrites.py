"""Rewrite rules (passes/legalize/resize.py, pool.py): before/after pairs, and each rule property-tested against
the un-rewritten op (NumPy reference), the framework's own op (torch; Keras where it has one) and
the emitted Keras model, at <= 1e-6 max abs on inputs in [-1, 1]."""
import os
import tempfile
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given
from hypothesis import strategies as st

from portx.targets.codegen import import_by_path as import_emitted
from portx.targets.keras_jax.emitter import emit_keras
from portx.frontends.torch import export_module, lower_exported
from portx.ir import format_graph, parse_graph, validate
from portx.passes.legalize import NODE_RULES, RULES, legalize
from portx.verification.compare import run_reference
from tests.support.harness import Wrap

TOL = 1e-6
# torch's own float32 bicubic evaluates the cubic polynomials in float32 with cancellation: its
# result is up to ~1.2e-6 from the exact value of its formula, while the rewrite is ~1e-7 from it
# (the un-rewritten op's NumPy reference). Bicubic is held to 1e-6 against that reference and to
# this bound against torch's float32 kernel.
CUBIC_F32_TOL = 2e-6
# torch in float64 maps output to input coordinates in double, torch in float32 (which the IR
# follows) in float: the weights differ by float32 rounding of the coordinates.
TORCH64_TOL = 2e-6


def _graph(text):
    return validate(parse_graph(text))


REPEAT = """
graph model(%x: float32[1x2x2x3]) {
  %y: float32[1x2x4x9] = resize(%x) {size=(4, 9), mode='nearest', align_corners=False, scales=None}  # up
  return %y
}"""
REPEAT_AFTER = """
graph model(%x: float32[1x2x2x3]) {
  %y_split: float32[1x2x2x1x3x1] = reshape(%x) {shape=(1, 2, 2, 1, 3, 1)}  # up
  %y_repeat: float32[1x2x2x2x3x3] = expand(%y_split) {shape=(1, 2, 2, 2, 3, 3)}  # up
  %y: float32[1x2x4x9] = reshape(%y_repeat) {shape=(1, 2, 4, 9)}  # up
  return %y
}"""
LINEAR_HALF = """
graph model(%x: float16[1x2x4x3]) {
  %y: float16[1x2x8x6] = resize(%x) {size=(8, 6), mode='linear', align_corners=True, scales=None}  # up
  return %y
}"""
LINEAR_HALF_AFTER = """
graph model(%x: float16[1x2x4x3]) {
  param %up.cols: float32[3x6]
  param %up.rows: float32[8x4]
  %y_float32: float32[1x2x4x3] = cast(%x) {dtype='float32'}  # up
  %y_cols: float32[1x2x4x6] = matmul(%y_float32, %up.cols) {}  # up
  %y_rows: float32[1x2x8x6] = matmul(%up.rows, %y_cols) {}  # up
  %y: float16[1x2x8x6] = cast(%y_rows) {dtype='float16'}  # up
  return %y
}"""
AVG_3D = """
graph model(%x: float32[1x2x5x4x6]) {
  %y: float32[1x2x3x3x4] = adaptive_avg_pool(%x) {size=(3, 3, 4)}  # pool
  return %y
}"""
AVG_3D_AFTER = """
graph model(%x: float32[1x2x5x4x6]) {
  param %pool.bin_cols: float32[6x4]
  param %pool.bin_rows: float32[3x4]
  param %pool.bin_depth: float32[3x5]
  %y_bin_cols: float32[1x2x5x4x4] = matmul(%x, %pool.bin_cols) {}  # pool
  %y_bin_rows: float32[1x2x5x3x4] = matmul(%pool.bin_rows, %y_bin_cols) {}  # pool
  %y_bin_depth_flat: float32[1x2x5x12] = reshape(%y_bin_rows) {shape=(1, 2, 5, 12)}  # pool
  %y_bin_depth: float32[1x2x3x12] = matmul(%pool.bin_depth, %y_bin_depth_flat) {}  # pool
  %y: float32[1x2x3x3x4] = reshape(%y_bin_depth) {shape=(1, 2, 3, 3, 4)}  # pool
  return %y
}"""


@pytest.mark.parametrize("before, after", [(REPEAT, REPEAT_AFTER), (LINEAR_HALF, LINEAR_HALF_AFTER),
                                           (AVG_3D, AVG_3D_AFTER)], ids=["repeat", "linear-half", "avg-3d"])
def test_rewrite_before_after(before, after):
    graph = _graph(before)
    rewritten = validate(legalize(graph, "keras-jax"))
    assert format_graph(rewritten) == format_graph(parse_graph(after, params=rewritten.params))
    x = np.random.default_rng(0).uniform(-1, 1, graph.inputs[0].type.shape).astype(graph.inputs[0].type.dtype)
    want = run_reference(graph, [x])[graph.outputs[0]]
    got = run_reference(rewritten, [x])[rewritten.outputs[0]]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=1e-3 if x.dtype == np.float16
                               else TOL)


def test_gather_tables_are_torchs_indices():
    graph = _graph("""
graph model(%x: float32[1x2x5x5]) {
  %y: float32[1x2x3x7] = resize(%x) {size=(3, 7), mode='nearest', align_corners=False, scales=None}  # up
  return %y
}""")
    rewritten = legalize(graph, "keras-jax")
    assert [n.op.name for n in rewritten.nodes] == ["index_select", "index_select"]
    assert rewritten.params["up.src_rows"].tolist() == [0, 1, 3]  # floor(i * 5 / 3)
    assert rewritten.params["up.src_cols"].tolist() == [0, 0, 1, 2, 2, 3, 4]  # floor(i * 5 / 7)
    assert rewritten.params["up.src_rows"].dtype == np.int32


def test_even_pools_and_identity_resizes_stay_native():
    graph = _graph("""
graph model(%x: float32[1x2x4x6]) {
  %a: float32[1x2x2x3] = adaptive_avg_pool(%x) {size=(2, 3)}  # even
  %b: float32[1x2x2x3] = adaptive_max_pool(%a) {size=(2, 3)}  # same
  %c: float32[1x2x2x3] = resize(%b) {size=(2, 3), mode='linear', align_corners=False, scales=None}  # noop
  return %c
}""")
    assert legalize(graph, "keras-jax") is graph


def test_every_rule_is_registered_with_a_before_after_docstring():
    assert set(NODE_RULES) <= set(RULES)
    for name, rule in NODE_RULES.items():
        assert "Before / after" in rule.__doc__ and "->" in rule.__doc__, name
        assert rule.ops, name


# -- properties ---------------------------------------------------------------------------------
def _lower(fn, x):
    module = Wrap(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return validate(lower_exported(export_module(module, [x])))


def _keras(graph, x):
    with tempfile.TemporaryDirectory() as tmp:
        emit_keras(graph, tmp)
        model = import_emitted(os.path.join(tmp, "model.py")).load_model()
        return np.asarray(model(x))


def _check(fn, x, gone, want_ops, tol=TOL, torch64_tol=None):
    """Rewrite ``fn``'s graph; compare it with the original op, torch and the emitted Keras model.

    Returns the rewritten graph's emitted-Keras output (for comparisons with Keras's own ops).
    """
    graph = _lower(fn, x)
    rewritten = validate(legalize(graph, "keras-jax"))
    ops = {n.op.name for n in rewritten.nodes}
    assert gone not in ops and want_ops <= ops, sorted(ops)
    arrays = [x.numpy()]
    original = run_reference(graph, arrays)[graph.outputs[0]]
    reference = run_reference(rewritten, arrays)[rewritten.outputs[0]]
    with torch.no_grad():
        framework = fn(x).numpy()
        framework64 = fn(x.double()).numpy()
    emitted = _keras(rewritten, arrays[0])
    assert np.abs(reference - original).max() <= TOL, "rewritten graph vs un-rewritten op"
    assert np.abs(emitted - original).max() <= TOL, "emitted Keras vs un-rewritten op"
    assert np.abs(emitted - framework).max() <= tol, "emitted Keras vs torch float32"
    assert np.abs(reference - framework).max() <= tol, "rewritten reference vs torch float32"
    if torch64_tol is not None:
        assert np.abs(emitted - framework64).max() <= torch64_tol, "emitted Keras vs torch float64"
    return emitted


def _image(draw, rank, max_side=6):
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(draw(st.integers(1, max_side))
                                                                       for _ in range(rank))
    seed = draw(st.integers(0, 2**16))
    return torch.from_numpy(np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32))


@st.composite
def integer_nearest(draw):
    x = _image(draw, draw(st.sampled_from([1, 2])))
    factors = tuple(draw(st.integers(1, 4)) for _ in range(x.dim() - 2))
    assume(max(factors) > 1)
    return x, factors


@given(integer_nearest())
def test_integer_nearest_is_a_broadcast(case):
    x, factors = case
    _check(lambda t: F.interpolate(t, scale_factor=factors, mode="nearest"), x, "resize", {"expand"})


@st.composite
def any_nearest(draw):
    x = _image(draw, draw(st.sampled_from([1, 2])), max_side=7)
    mode = draw(st.sampled_from(["nearest", "nearest-exact"]))
    if draw(st.booleans()):
        size = tuple(draw(st.integers(1, 12)) for _ in range(x.dim() - 2))
        assume(size != tuple(x.shape[2:]))
        return x, {"size": size, "mode": mode}
    scale = draw(st.sampled_from([0.3, 0.5, 0.75, 1.5, 1.7, 2.5]))
    assume(all(int(n * scale) >= 1 for n in x.shape[2:]))
    return x, {"scale_factor": scale, "mode": mode}


@given(any_nearest())
def test_any_nearest_is_a_static_gather_with_torchs_indices(case):
    x, kwargs = case
    fn = lambda t: F.interpolate(t, **kwargs)  # noqa: E731
    with torch.no_grad():
        assume(tuple(fn(x).shape) != tuple(x.shape))
    _check(fn, x, "resize", set())


@st.composite
def interpolation(draw, rank):
    x = _image(draw, rank)
    align = draw(st.booleans())
    if draw(st.booleans()):
        size = tuple(draw(st.integers(1, 12)) for _ in range(rank))
        assume(size != tuple(x.shape[2:]))
        return x, {"size": size, "align_corners": align}
    return x, {"scale_factor": draw(st.sampled_from([2, 3, 4])), "align_corners": align}


@given(interpolation(2), st.sampled_from(["bilinear", "linear1d"]))
def test_linear_is_a_matmul_per_axis(case, kind):
    x, kwargs = case
    if kind == "linear1d":
        x, kwargs = x[:, :, 0], {**kwargs, "size": kwargs["size"][1:]} if "size" in kwargs else kwargs
        assume("size" not in kwargs or kwargs["size"] != tuple(x.shape[2:]))
    mode = "bilinear" if x.dim() == 4 else "linear"
    _check(lambda t: F.interpolate(t, mode=mode, **kwargs), x, "resize", {"matmul"}, torch64_tol=TORCH64_TOL)


@given(interpolation(2))
def test_bicubic_is_a_matmul_per_axis(case):
    x, kwargs = case
    _check(lambda t: F.interpolate(t, mode="bicubic", **kwargs), x, "resize", {"matmul"}, tol=CUBIC_F32_TOL,
           torch64_tol=TORCH64_TOL)


@st.composite
def keras_resize(draw):
    x = _image(draw, 2)
    size = (draw(st.integers(1, 12)), draw(st.integers(1, 12)))
    assume(size != tuple(x.shape[2:]))
    return x, size, draw(st.booleans())


@given(keras_resize())
def test_bilinear_matches_keras_semantics(case):
    """The same rewrite is Keras's bilinear resize (half-pixel) and its scale_and_translate (corners)."""
    from keras import ops

    x, size, align = case
    assume(not align or min(x.shape[2:]) > 1)  # an axis of 1 has no corner-aligned Keras equivalent
    got = _check(lambda t: F.interpolate(t, size=size, mode="bilinear", align_corners=align), x, "resize",
                 {"matmul"})
    if align:
        scale = np.array([(o - 1) / (i - 1) if o > 1 else 1.0 for i, o in zip(x.shape[2:], size)], np.float32)
        want = ops.image.scale_and_translate(x.numpy(), (*x.shape[:2], *size), scale, 0.5 - 0.5 * scale,
                                             spatial_dims=(2, 3), method="linear", antialias=False)
    else:
        want = ops.image.resize(x.numpy(), size, interpolation="bilinear", antialias=False,
                                data_format="channels_first")
    assert np.abs(got - np.asarray(want)).max() <= TOL


@st.composite
def uneven_pool(draw):
    x = _image(draw, draw(st.sampled_from([1, 2])), max_side=9)
    size = tuple(draw(st.integers(1, 7)) for _ in range(x.dim() - 2))
    assume(any(n % o for n, o in zip(x.shape[2:], size)))
    return x, size


@given(uneven_pool())
def test_uneven_adaptive_avg_pool_is_a_pooling_matrix(case):
    x, size = case
    pool = F.adaptive_avg_pool1d if x.dim() == 3 else F.adaptive_avg_pool2d
    _check(lambda t: pool(t, size), x, "adaptive_avg_pool", {"matmul"}, torch64_tol=TOL)


@given(uneven_pool())
def test_uneven_adaptive_max_pool_is_a_gather_and_max(case):
    x, size = case
    pool = F.adaptive_max_pool1d if x.dim() == 3 else F.adaptive_max_pool2d
    _check(lambda t: pool(t, size), x, "adaptive_max_pool", {"index_select", "amax"}, tol=0.0)


def test_torch_xla_keeps_resizes_that_nn_upsample_computes():
    graph = _graph("""
graph model(%x: float32[1x2x2x3]) {
  %a: float32[1x2x4x6] = resize(%x) {size=(4, 6), mode='nearest', align_corners=None, scales=(2.0, 2.0)}
  %b: float32[1x2x8x12] = resize(%a) {size=(8, 12), mode='linear', align_corners=False, scales=None}
  %c: float32[1x2x9x12] = resize(%b) {size=(9, 12), mode='nearest', align_corners=None, scales=None}
  return %c
}""")
    ops = [n.op.name for n in legalize(graph, "torch-xla").nodes]
    assert ops[:2] == ["resize", "resize"] and "resize" not in ops[2:], ops
