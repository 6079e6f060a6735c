"""resize (torch upsample_*): torch -> IR -> NumPy reference and both targets' emitted models, against torch."""
import ast
import tempfile

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given
from hypothesis import strategies as st
from torch import nn

from portx.targets.keras_jax.emitter import emit_keras
from portx.targets.torch_xla.emitter import emit_torch
from portx.errors import UnsupportedOps
from portx.frontends.torch import export_module, lower_exported
from portx.ops.resize import RESIZE, is_identity, linear_matrix, nearest_indices
from portx.passes.pipeline import run_passes
from tests.support.harness import check_torch_op

TOL = {"atol": 1e-5, "rtol": 1e-4}
aten = torch.ops.aten


def _up(**kwargs):
    return lambda: (lambda x: F.interpolate(x, **kwargs))


def _fn(fn):
    return lambda: fn


# (function/module factory, input shape); every case lowers to one resize node.
CASES = [
    pytest.param(_up(scale_factor=2, mode="nearest"), (2, 3, 4, 5), id="nearest-x2"),
    pytest.param(_up(scale_factor=(3, 4), mode="nearest"), (1, 2, 3, 2), id="nearest-x3-x4"),
    pytest.param(_up(scale_factor=1.5, mode="nearest"), (1, 2, 5, 7), id="nearest-x1.5"),
    pytest.param(_up(scale_factor=1 / 3, mode="nearest"), (1, 2, 9, 7), id="nearest-third"),
    pytest.param(_up(scale_factor=2.3, mode="nearest", recompute_scale_factor=True), (1, 2, 3, 4),
                 id="nearest-recompute-scale"),
    pytest.param(_up(size=(7, 3), mode="nearest"), (1, 2, 3, 5), id="nearest-size"),
    pytest.param(_up(size=(8, 10), mode="nearest"), (1, 2, 4, 5), id="nearest-size-x2"),
    pytest.param(_up(scale_factor=1.5, mode="nearest-exact"), (1, 2, 5, 7), id="nearest-exact-x1.5"),
    pytest.param(_up(size=(9, 4), mode="nearest-exact"), (1, 2, 4, 6), id="nearest-exact-size"),
    pytest.param(_up(scale_factor=2, mode="bilinear"), (2, 3, 4, 5), id="bilinear-x2"),
    pytest.param(_up(scale_factor=3, mode="bilinear"), (1, 2, 3, 4), id="bilinear-x3"),
    pytest.param(_up(scale_factor=4, mode="bilinear"), (1, 2, 2, 3), id="bilinear-x4"),
    pytest.param(_up(scale_factor=1.7, mode="bilinear"), (1, 2, 5, 4), id="bilinear-x1.7"),
    pytest.param(_up(scale_factor=0.5, mode="bilinear"), (1, 2, 8, 6), id="bilinear-half"),
    pytest.param(_up(scale_factor=1.25, mode="bilinear"), (1, 2, 2, 8), id="bilinear-axis-unchanged"),
    pytest.param(_up(size=(7, 3), mode="bilinear"), (1, 2, 4, 5), id="bilinear-size"),
    pytest.param(_up(scale_factor=2, mode="bilinear", align_corners=True), (1, 2, 4, 5), id="bilinear-ac-x2"),
    pytest.param(_up(size=(7, 1), mode="bilinear", align_corners=True), (1, 2, 4, 5), id="bilinear-ac-size"),
    pytest.param(_up(scale_factor=2, mode="bicubic"), (1, 2, 4, 5), id="bicubic-x2"),
    pytest.param(_up(scale_factor=1.5, mode="bicubic", align_corners=True), (1, 2, 4, 5), id="bicubic-ac"),
    pytest.param(_up(size=(3, 9), mode="bicubic"), (1, 2, 5, 4), id="bicubic-size"),
    pytest.param(lambda: nn.Upsample(scale_factor=2), (1, 3, 4, 4), id="nn-upsample"),
    pytest.param(lambda: nn.UpsamplingBilinear2d(scale_factor=2), (1, 3, 4, 4), id="nn-upsampling-bilinear"),
    pytest.param(_up(scale_factor=3, mode="nearest"), (2, 3, 5), id="nearest1d-x3"),
    pytest.param(_up(scale_factor=1.5, mode="nearest"), (2, 3, 5), id="nearest1d-x1.5"),
    pytest.param(_up(scale_factor=2.5, mode="nearest-exact"), (2, 3, 5), id="nearest-exact1d"),
    pytest.param(_up(scale_factor=2, mode="linear"), (2, 3, 5), id="linear1d-x2"),
    pytest.param(_up(size=7, mode="linear", align_corners=True), (2, 3, 5), id="linear1d-ac"),
    pytest.param(_up(scale_factor=2, mode="trilinear"), (1, 2, 3, 4, 5), id="trilinear-x2"),
    pytest.param(_up(size=(5, 3, 7), mode="trilinear", align_corners=True), (1, 2, 3, 4, 5), id="trilinear-ac-size"),
    pytest.param(_up(scale_factor=(2, 1.5, 0.5), mode="trilinear"), (1, 2, 3, 4, 6), id="trilinear-mixed"),
    pytest.param(_up(scale_factor=2, mode="nearest"), (1, 2, 3, 4, 5), id="nearest3d-x2"),
    pytest.param(_up(size=(5, 3, 7), mode="nearest"), (1, 2, 3, 4, 5), id="nearest3d-size"),
    pytest.param(_up(scale_factor=1.5, mode="nearest-exact"), (1, 2, 3, 4, 5), id="nearest-exact3d"),
    pytest.param(_fn(lambda x: aten.upsample_trilinear3d(x, [6, 8, 5], False, 2.0, 2.0, None)), (1, 2, 3, 4, 5),
                 id="aten-trilinear3d-default-overload"),
    pytest.param(_fn(lambda x: aten.upsample_nearest2d(x, [6, 5], 2.0, None)), (1, 2, 3, 4),
                 id="aten-nearest2d-default-overload"),
    pytest.param(_fn(lambda x: aten.upsample_bilinear2d(x, [6, 7], False, 2.0, 1.75)), (1, 2, 3, 4),
                 id="aten-bilinear2d-default-overload"),
    pytest.param(_fn(lambda x: aten._upsample_nearest_exact2d(x, [5, 5])), (1, 2, 3, 4),
                 id="aten-nearest-exact2d-default-overload"),
]


@pytest.mark.parametrize("make, shape", CASES)
def test_resize_case(target, make, shape):
    torch.manual_seed(0)
    graph = check_torch_op(make(), torch.randn(shape), expect_ops=["resize"], target=target, **TOL)
    assert [n.op for n in graph.nodes][-1] is RESIZE


def _code(fn, shape, emit=emit_keras, passes="keras-jax", inputs=None):
    """The emitted model.py text for ``fn`` on a random input of ``shape`` (or ``inputs``), after ``passes``' pipeline."""
    graph = lower_exported(export_module(fn, inputs or [torch.randn(shape)]))
    graph = run_passes(graph, passes) if passes else graph
    with tempfile.TemporaryDirectory() as tmp:
        return emit(graph, tmp)["code"].read_text()


class _Fn(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return F.interpolate(x, **self.kwargs)


@pytest.mark.parametrize("mode,size,shape", [("bilinear", (5, 7), (1, 2, 13, 17)), ("bilinear", (20, 9), (2, 3, 13, 17)),
                                             ("bicubic", (5, 7), (1, 2, 13, 17)), ("bicubic", (6, 30), (1, 1, 13, 17))],
                         ids=["bilinear-down", "bilinear-mixed", "bicubic-down", "bicubic-mixed"])
def test_antialiased_resize(target, mode, size, shape):
    """F.interpolate(antialias=True) (aten::_upsample_*_aa): torch's filters, widened by the downscale factor."""
    check_torch_op(_up(size=size, mode=mode, antialias=True)(), torch.randn(shape), expect_ops=["matmul"],
                   target=target, **TOL)


def test_antialiased_resize_refuses_scales_that_are_not_sizes():
    with pytest.raises(UnsupportedOps, match="scale factors"):
        check_torch_op(_up(scale_factor=0.37, mode="bilinear", antialias=True)(), torch.randn(1, 2, 13, 17),
                       target="keras-jax", **TOL)


@pytest.mark.parametrize("kwargs, shape, expected, absent", [
    ({"scale_factor": 2, "mode": "nearest"}, (1, 2, 4, 4), "ops.broadcast_to(", "ops.take"),
    ({"scale_factor": (1.5, 3), "mode": "nearest"}, (1, 2, 4, 4), "ops.take(", "UpSampling2D"),
    ({"scale_factor": 1.5, "mode": "nearest"}, (1, 2, 4, 4), "ops.take(", "UpSampling2D"),
    ({"scale_factor": 2, "mode": "bilinear"}, (1, 2, 4, 5), "upsample_bilinear2d_rows", "UpSampling2D"),
    ({"size": (4, 10), "mode": "bilinear"}, (1, 2, 4, 5), "ops.matmul(x, upsample_bilinear2d_cols)", "_rows"),
])
def test_keras_form(kwargs, shape, expected, absent):
    # The keras-jax pipeline legalizes every resize (passes/legalize/resize.py): integer nearest is a
    # broadcast, other nearest a gather with torch's indices (keras' own nearest resize picks other
    # pixels), (bi)linear one matmul per resized axis.
    code = _code(_Fn(**kwargs), shape)
    assert expected in code and absent not in code


@pytest.mark.parametrize("emit, native", [(emit_keras, "layers.UpSampling2D(2, data_format='channels_first'"),
                                          (emit_torch, "nn.Upsample(scale_factor=2.0, mode='nearest')")])
def test_emit_rules_write_native_forms_only(emit, native):
    # Note [resize native forms]: an emitter fed an unlegalized graph writes its framework's own
    # upsampling where it has torch's sampling, and refuses the rest with a one-line reason (exit 3).
    code = _code(_Fn(scale_factor=2, mode="nearest"), (1, 2, 4, 4), emit, passes=None)
    assert native in ast.unparse(ast.parse(code))  # one line a statement, however model.py wraps it
    with pytest.raises(UnsupportedOps, match=r"cubic resize 4->8 x 5->10 .*\(passes/legalize/resize.py\)"):
        _code(_Fn(scale_factor=2, mode="bicubic"), (1, 2, 4, 5), emit, passes=None)


def test_an_identity_resize_is_left_to_the_emitter(target):
    # no rule rewrites a resize that keeps every size; both emitters write it as the identity
    graph = check_torch_op(_Fn(size=(4, 5), mode="bilinear"), torch.randn(1, 2, 4, 5), target=target, **TOL)
    assert RESIZE in [n.op for n in run_passes(graph, target).nodes]


def test_nearest_indices_follow_torch_not_half_pixel():
    # torch: floor(dst * 5 / 7); keras/JAX nearest would give floor((dst + 0.5) * 5 / 7).
    assert nearest_indices(5, 7).tolist() == [0, 0, 1, 2, 2, 3, 4]
    assert nearest_indices(5, 7, exact=True).tolist() == [0, 1, 1, 2, 3, 3, 4]
    assert nearest_indices(4, 3).tolist() == [0, 1, 2] and not is_identity(nearest_indices(4, 3), 4)  # a crop


def test_linear_matrix_clamps_negative_source_to_zero():
    assert np.allclose(linear_matrix(2, 4) @ np.array([0.0, 1.0]), [0.0, 0.25, 0.75, 1.0])


modes = st.sampled_from(["nearest", "nearest-exact", "bilinear", "bicubic"])


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(1, 4), modes, st.booleans(),
       st.booleans())
def test_resize_property(target, h, w, sh, sw, mode, align_corners, by_size):
    align = align_corners if mode in ("bilinear", "bicubic") else None
    if by_size:  # arbitrary output sizes, including downsampling
        kwargs = {"size": (max(1, h * sh - sw), w + sh)}
    else:
        kwargs = {"scale_factor": (sh * 0.75 if align_corners else sh, float(sw))}
        assume(int(h * kwargs["scale_factor"][0]) >= 1)
    torch.manual_seed(0)
    check_torch_op(_Fn(mode=mode, align_corners=align, **kwargs), torch.randn(1, 2, h, w), expect_ops=["resize"],
                   **TOL, target=target)


@given(st.integers(1, 9), st.integers(1, 30), st.sampled_from([None, 0.5, 1.25, 1.5, 2.0, 2.5, 3.0, 1 / 3]),
       modes, st.booleans())
def test_resize_reference_matches_torch(n_in, n_out, scale, mode, align_corners):
    assume(scale is None or int(n_in * scale) >= 1)
    x = torch.randn(1, 2, 3, n_in)
    align = align_corners if mode in ("bilinear", "bicubic") else None
    if scale is None:
        want = F.interpolate(x, size=(3, n_out), mode=mode, align_corners=align)
    else:
        want = F.interpolate(x, scale_factor=(1.0, scale), mode=mode, align_corners=align)
    attrs = {"size": tuple(want.shape[2:]), "mode": {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
             .replace("-", "_"), "align_corners": bool(align), "scales": None if scale is None or align
             else (1.0, scale)}
    got = RESIZE.reference_rule(x.numpy(), **attrs)
    np.testing.assert_allclose(got, want.numpy(), atol=1e-5, rtol=1e-5)


def _grid(mode, padding, align_corners):
    return lambda x, grid: F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align_corners)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(target, mode, padding, align_corners):
    # Note [grid sample]: grid points reach past [-1, 1] so every padding mode is exercised
    torch.manual_seed(0)
    x, grid = torch.randn(2, 3, 5, 6), torch.rand(2, 4, 7, 2) * 3.0 - 1.5
    check_torch_op(_grid(mode, padding, align_corners), x, grid, expect_ops=["grid_sample"], target=target, **TOL)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_3d(target, mode, padding, align_corners):
    # aten::grid_sampler_3d: the same rule on NCDHW volumes (trilinear = "bilinear"), grid points past [-1, 1]
    torch.manual_seed(2)
    x, grid = torch.randn(2, 3, 4, 5, 6), torch.rand(2, 3, 4, 2, 3) * 3.0 - 1.5
    check_torch_op(_grid(mode, padding, align_corners), x, grid, expect_ops=["grid_sample"], target=target, **TOL)


def test_grid_sample_of_a_one_pixel_axis_and_bicubic(target):
    torch.manual_seed(1)
    x, grid = torch.randn(1, 2, 1, 4), torch.rand(1, 3, 3, 2) * 3.0 - 1.5
    check_torch_op(_grid("bilinear", "reflection", True), x, grid, expect_ops=["grid_sample"], target=target, **TOL)
    with pytest.raises(UnsupportedOps, match="bicubic"):
        lower_exported(export_module(_Fn2(_grid("bicubic", "zeros", False)), [x, grid]))


class _Fn2(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, grid):
        return self.fn(x, grid)


def test_grid_sample_is_written_out_for_torch_xla():
    # PyTorch/XLA has no grid_sampler_2d lowering: the emitted model gathers instead of calling F.grid_sample
    code = _code(_Fn2(_grid("bilinear", "border", False)), None, emit_torch, "torch-xla",
                 [torch.randn(1, 2, 4, 5), torch.rand(1, 3, 3, 2)])
    assert "torch.gather(" in code and "grid_sample(" not in code
    code = _code(_Fn2(_grid("nearest", "zeros", True)), None, emit_torch, "torch-xla",
                 [torch.randn(1, 2, 3, 4, 5), torch.rand(1, 2, 3, 3, 3)])
    assert "torch.gather(" in code and "grid_sample(" not in code
