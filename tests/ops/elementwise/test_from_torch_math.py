"""Elementwise math decomposed at import (ops/elementwise/from_torch_math.py): logical_xor, ldexp, frexp, fmax, fmin,
dist and the scaled elu behind selu, each against torch on both targets."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.support.harness import check_torch_op

SPECIAL = np.array([0.0, -0.0, 1.0, -3.5, 1e-40, -1e-45, 3e38, np.inf, -np.inf, np.nan, 0.5, 0.75, 1e-3, -7e5],
                   dtype=np.float32)
WITH_NAN = np.array([[np.nan, 1.0, np.nan], [2.0, -1.0, 0.5]], dtype=np.float32)
OTHER_NAN = np.array([[3.0, np.nan, np.nan], [-2.0, 4.0, 0.5]], dtype=np.float32)
BOOLS = np.array([[True, False, True], [False, False, True]])


def _inputs(specs, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) if isinstance(s, tuple) else np.asarray(s) for s in specs]


CASES = [
    pytest.param(torch.logical_xor, [(2, 3), (2, 3)], "ne", id="logical-xor-floats"),
    pytest.param(lambda a, b: torch.logical_xor(a, b), [BOOLS, BOOLS[::-1].copy()], "ne", id="logical-xor-bools"),
    pytest.param(lambda a, b: torch.logical_xor(a.round(), b), [(2, 3), BOOLS], "ne", id="logical-xor-mixed"),
    pytest.param(torch.ldexp, [(2, 3), np.array([[1, -2, 0], [3, 5, -1]])], "pow", id="ldexp-int-exponent"),
    pytest.param(lambda a, b: torch.ldexp(a, b.round()), [(2, 3), (2, 3)], "pow", id="ldexp-float-exponent"),
    pytest.param(lambda x: torch.frexp(x), [SPECIAL], "bitcast", id="frexp-special-values"),
    pytest.param(lambda x: torch.frexp(x * 100), [(3, 4)], "bitcast", id="frexp-normal"),
    pytest.param(lambda x: torch.frexp(x.half()), [SPECIAL[:4]], "bitcast", id="frexp-float16"),
    pytest.param(torch.fmax, [WITH_NAN, OTHER_NAN], "maximum", id="fmax-nan"),
    pytest.param(torch.fmin, [WITH_NAN, OTHER_NAN], "minimum", id="fmin-nan"),
    pytest.param(lambda a, b: torch.fmax(a, b[0]), [(2, 3), (1, 3)], "maximum", id="fmax-broadcast"),
    pytest.param(lambda a, i: torch.fmin(a, i), [(2, 3), np.array([1, -1, 0])], "minimum", id="fmin-int-operand"),
    pytest.param(torch.dist, [(2, 3, 4), (2, 3, 4)], "vector_norm", id="dist-2"),
    pytest.param(lambda a, b: torch.dist(a, b, 1), [(2, 3), (3,)], "vector_norm", id="dist-1-broadcast"),
    pytest.param(lambda a, b: torch.dist(a, b, 0), [(2, 3), (2, 3)], "vector_norm", id="dist-0"),
    pytest.param(lambda a, b: torch.dist(a, b, float("inf")), [(2, 3), (2, 3)], "vector_norm", id="dist-inf"),
    pytest.param(lambda a, b: torch.dist(a, b, float("-inf")), [(2, 3), (2, 3)], "vector_norm", id="dist-minus-inf"),
    pytest.param(lambda a, b: torch.dist(a, b, 3.5), [(2, 3), (2, 3)], "vector_norm", id="dist-3.5"),
    pytest.param(F.selu, [(2, 3)], "elu", id="selu"),
    pytest.param(lambda x: F.elu(x, alpha=0.5) * 1, [(2, 3)], "elu", id="elu-plain"),
    pytest.param(lambda x: torch.ops.aten.elu(x, 0.7, 1.3, 2.0), [(3, 4)], "expm1", id="elu-scale-input-scale"),
]


@pytest.mark.parametrize("fn, specs, op", CASES)
def test_decomposed_math_matches_torch(target, fn, specs, op):
    check_torch_op(fn, *_inputs(specs), expect_ops=[op], target=target)


def test_frexp_mantissa_times_power_is_input(target):
    """x == mantissa * 2**exponent with 0.5 <= |mantissa| < 1, over the float32 range (subnormals included)."""
    x = (np.float32(2.0) ** np.arange(-149, 128, 7, dtype=np.float32) * np.float32(1.37)).astype(np.float32)
    graph = check_torch_op(lambda t: torch.frexp(t), x, target=target, atol=0.0, rtol=0.0)
    assert [v.type.dtype for v in graph.outputs] == ["float32", "int32"]
    mantissa, exponent = torch.frexp(torch.from_numpy(x))
    assert torch.equal(torch.ldexp(mantissa, exponent), torch.from_numpy(x))
