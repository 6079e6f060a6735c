"""ONNX's own node test cases through portx to both emitters (tests/conformance/onnx_cases.py).

Each case passes, or is listed in ``onnx_xfail.toml`` with its reason and fails (strict). CI runs ``QUICK``, a
fixed sample across the op families; ``PORTX_SLOW=1`` runs every case of every op the frontend claims.
``benchmarks/onnx_coverage.py`` prints the pass rate per op.
"""
import os

import pytest

from tests.conformance.onnx_cases import TARGETS, XFAIL, claimed_cases, run_case, xfail_reason

#: one or two cases per family, chosen to exercise the rules' odd forms (asymmetric pads, negative steps, ...)
QUICK = ("test_conv_with_strides_and_asymmetric_padding", "test_convtranspose_pads", "test_gemm_all_attributes",
         "test_matmul_3d", "test_einsum_transpose", "test_batchnorm_epsilon", "test_layer_normalization_4d_axis1",
         "test_instancenorm_example", "test_maxpool_2d_ceil", "test_averagepool_2d_pads_count_include_pad",
         "test_globalaveragepool", "test_resize_upsample_scales_linear_half_pixel_symmetric",
         "test_resize_downsample_sizes_nearest", "test_edge_pad", "test_slice_neg_steps", "test_gather_2d_indices",
         "test_gather_elements_1", "test_reshape_zero_and_negative_dim", "test_unsqueeze_negative_axes",
         "test_split_variable_parts_2d_opset18", "test_expand_dim_changed", "test_reduce_mean_keepdims_random",
         "test_reduce_l2_do_not_keepdims_example", "test_argmax_negative_axis_keepdims_random_select_last_index",
         "test_softmax_axis_0", "test_cumsum_1d_reverse_exclusive", "test_hardsigmoid", "test_clip_default_int8_min",
         "test_where_long_example", "test_cast_FLOAT_to_FLOAT16", "test_attention_4d_gqa_attn_mask",
         "test_gathernd_example_float32", "test_scatternd_add")


def _params(names):
    for name in names:
        for target in TARGETS:
            reason = xfail_reason(name, target)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            yield pytest.param(name, target, id=f"{name}-{target}", marks=marks)


def _check(name, target):
    problem = run_case(claimed_cases()[name], target)
    assert problem is None, f"{name} on {target}: {problem}"


@pytest.mark.parametrize("name,target", list(_params(QUICK)))
def test_quick_case(name, target):
    _check(name, target)


_EVERY = list(_params(sorted(claimed_cases()))) if os.environ.get("PORTX_SLOW") == "1" else [("", "")]


@pytest.mark.slow
@pytest.mark.parametrize("name,target", _EVERY)
def test_every_case(name, target):
    _check(name, target)


def test_xfail_list_names_only_claimed_cases():
    stale = sorted(set(XFAIL) - set(claimed_cases()))
    assert not stale, f"onnx_xfail.toml lists cases that are not claimed node cases: {stale[:10]}"
    assert set(QUICK) <= set(claimed_cases())
