"""keras.ops programs that mix families (arithmetic, shape, indexing, reductions, einsum, getitem): each case is
a tiny functional model on seeded inputs, lowered, validated, the IR's NumPy reference compared with Keras (JAX
backend) at 1e-5, then each target's emitted model compared with Keras. Single Keras layers are tested with
their op family, in tests/ops/<family>/test_from_keras.py.

Example:
    pytest tests/frontends/test_keras_ops.py -k einsum
"""
import keras
import numpy as np
import pytest
from keras import ops

from tests.support.harness import TARGETS
from tests.support.keras_harness import check_keras_model, seeded

__all__ = []


def _pos(x):
    return ops.abs(x) + 0.5


# id: (fn(*inputs) -> output, batchless input shapes)
OPS_CASES = {
    "add-sub-mul-div": (lambda x, y: ((x + y) * (x - 2.0)) / (ops.abs(y) + 1.0) - 1.5 * ops.divide(x, 3.0),
                        [(3, 4), (3, 4)]),
    "subtract-from-number": (lambda x: ops.subtract(1.0, x), [(3, 4)]),
    "power-square-sqrt": (lambda x, y: ops.power(_pos(x), y) + ops.square(x) + ops.sqrt(_pos(y)) + x ** 2,
                          [(3, 4), (3, 4)]),
    "max-min-where": (lambda x, y: ops.where(x > y, ops.maximum(x, 0.2), ops.minimum(y, x)), [(3, 4), (3, 4)]),
    "matmul-transpose": (lambda x, y: ops.matmul(x, ops.transpose(y, (0, 2, 1))) + x @ ops.transpose(y, (0, 2, 1)),
                         [(3, 4), (5, 4)]),
    "reshape-expand-squeeze": (lambda x: ops.squeeze(ops.expand_dims(ops.reshape(x, (-1, 2, 6)), 1), 1),
                               [(3, 4)]),
    "concatenate-stack-split": (lambda x, y: ops.concatenate([ops.stack([x, y], axis=1), ops.split(ops.stack(
        [y, x, x], axis=1), [1], axis=1)[1]], axis=1), [(3, 4), (3, 4)]),
    "mean-sum-max": (lambda x: ops.mean(x, axis=1) + ops.sum(x, axis=-1) + ops.max(x, axis=(1,)) + ops.min(x, axis=1)
                     + ops.sum(x, axis=(1, 2), keepdims=True)[:, 0], [(4, 4)]),
    "var-std-prod-logsumexp": (lambda x: ops.var(x, axis=-1) + ops.std(x, axis=-1) + ops.prod(x, axis=-1)
                               + ops.logsumexp(x, axis=-1), [(3, 4)]),
    "bitwise-on-masks": (lambda x, y: ops.cast(ops.bitwise_xor(ops.bitwise_or(ops.bitwise_and(x > 0, y > 0), x > 1),
                                                              ops.logical_not(y < -1)), "float32")
                         + ops.cast(ops.bitwise_and(ops.cast(x > 0, "int32"), np.array(1, "int32")), "float32"),
                         [(3, 4), (3, 4)]),
    "inverse-trig-and-exp": (lambda x: ops.arcsin(ops.tanh(x)) + ops.arccos(ops.tanh(x)) + ops.arctan(x)
                             + ops.arcsinh(x) + ops.arccosh(ops.abs(x) + 1.0) + ops.arctanh(ops.tanh(x) * 0.5)
                             + ops.log1p(ops.abs(x)) + ops.expm1(x) + ops.exp2(x) + ops.trunc(x * 3)
                             + ops.arctan2(x, x + 2.0)
                             + ops.cast(ops.isnan(ops.log(x)), "float32") + ops.cast(ops.isfinite(x), "float32"),
                             [(3, 4)]),
    "cumsum": (lambda x: ops.cumsum(x, axis=1) + ops.cumsum(x, axis=-1) + ops.flip(ops.cumsum(ops.flip(x, 2), 2), 2),
               [(3, 4)]),
    "softmax-log-softmax": (lambda x: ops.softmax(x) + ops.log_softmax(x, axis=1) + ops.softmax(x, axis=(1, 2)),
                            [(3, 4)]),
    "activations": (lambda x: ops.relu(x) + ops.sigmoid(x) + ops.tanh(x) + ops.exp(x) + ops.erf(x) + ops.gelu(x)
                    + ops.gelu(x, approximate=False) + ops.silu(x) + ops.relu6(x * 4) + ops.leaky_relu(x)
                    + ops.elu(x) + ops.selu(x) + ops.softplus(x) + ops.hard_sigmoid(x) + ops.hard_silu(x), [(3, 4)]),
    "unary-math": (lambda x: ops.log(_pos(x)) + ops.rsqrt(_pos(x)) + ops.reciprocal(_pos(x)) + ops.negative(x)
                   + ops.sign(x) + ops.floor(x) + ops.ceil(x) + ops.sin(x) + ops.cos(x) + ops.clip(x, -0.5, 0.5),
                   [(3, 4)]),
    "compare-cast": (lambda x, y: ops.cast(ops.logical_and(x > 0, ops.less_equal(y, 0.5)), "float32")
                     + ops.cast(ops.logical_not(ops.equal(x, y)), "float32"), [(3, 4), (3, 4)]),
    "getitem": (lambda x: ops.concatenate([x[:, 1:3, ::2], x[:, ::-2, 1::2], x[..., 1:3, -3:]], axis=-1)[:, None, 0],
                [(4, 6)]),
    "getitem-int": (lambda x: x[:, 2] + x[:, -1, ::-1] + x[:, 0:1, 3][:, 0, None], [(4, 6)]),
    "take-tile-repeat": (lambda x: ops.take(x, [2, 0, 1], axis=1) + ops.tile(x[:, :1], (1, 3, 1))
                         + ops.repeat(x[:, :, :1], 3, axis=1)[:, :3], [(3, 2)]),
    "swapaxes-moveaxis-flip-roll": (lambda x: ops.swapaxes(x, 1, 2) + ops.moveaxis(ops.flip(x, 1), 1, 2)
                                    + ops.roll(ops.transpose(x, (0, 2, 1)), 1, axis=2), [(3, 4)]),
    "einsum": (lambda x, y: ops.einsum("btc,bsc->bts", x, y) + ops.einsum("bij,bkj->bki", x, y)
               + ops.einsum("bsc->bcs", y)[:, :3, :3], [(3, 4), (3, 4)]),
    "einsum-outer-and-sum": (lambda x, y: ops.einsum("bi,bj->bij", ops.sum(x, 1), ops.sum(y, 1))
                             + ops.einsum("bik,bjk->bij", x, y)[:, :1, :1], [(4, 4), (4, 4)]),
    "broadcast-pad": (lambda x: ops.pad(ops.broadcast_to(x[:, :1], (1, 3, 4)), ((0, 0), (1, 0), (2, 1))),
                      [(3, 4)]),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(OPS_CASES))
def test_keras_ops_match_reference(target, case):
    fn, shapes = OPS_CASES[case]
    inputs = [keras.Input(s) for s in shapes]
    model = keras.Model(inputs, fn(*inputs))
    check_keras_model(model, *[seeded((1,) + s, seed=i) for i, s in enumerate(shapes)], target=target,
                      randomize=False)
