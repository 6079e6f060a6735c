"""Keras sources through the JAX frontend: ``keras.ops`` take / take_along_axis / scatter / scatter_update /
slice_update / diagonal and ``jnp`` ``.at[]`` updates in a subclassed model, traced to XLA ``gather`` and
``scatter*`` primitives (ops/scatter/from_jax.py), lowered, checked against Keras by the IR reference and
by each target's emitted model.

Example:
    pytest tests/ops/scatter/test_from_keras.py -k take_along
"""
import jax
import jax.numpy as jnp
import keras
import numpy as np
import pytest
from keras import ops

from portx.frontends.keras.subclassed import lower_keras_subclassed
from portx.ir import validate
from portx.verification.compare import compare_arrays, run_reference
from tests.support.harness import emit_and_run

PICK = np.array([2, 0, 3])
QUANTILE_DIMS = jax.lax.GatherDimensionNumbers(offset_dims=(0, 1), collapsed_slice_dims=(1,), start_index_map=(1,))
WINDOW_DIMS = jax.lax.GatherDimensionNumbers(offset_dims=(1, 2, 3), collapsed_slice_dims=(), start_index_map=(1, 2))


def _flag(x):
    """A start index known only at run time: 1 where x[0, 0, 0] > 0, else 0 (int32)."""
    return ops.cast(x[0, 0, 0] > 0, "int32")


class Traced(keras.Model):
    """A subclassed model whose ``call`` is one function of its input (traced to a jaxpr by portx)."""

    def __init__(self, fn, **kwargs):
        super().__init__(**kwargs)
        self.fn = fn

    def call(self, x):
        return self.fn(x)


CASES = {
    "take": lambda x: ops.take(x, np.array([2, 0, 1]), axis=1),
    "take-2d-index": lambda x: ops.take(x, np.array([[0, 1], [3, 2]]), axis=2),
    "take-flat": lambda x: ops.take(x, PICK * 5 + 1),
    "take-0d": lambda x: ops.take(x, np.array(1), axis=1),
    "take-negative": lambda x: ops.take(x, np.array([-1, 0]), axis=-1),
    "take-along-axis": lambda x: ops.take_along_axis(x, np.array([[[0, 1, 2, 0], [2, 2, 1, 0]]] * 2), axis=1),
    "take-along-axis-broadcast": lambda x: ops.take_along_axis(x, np.array([[[3], [0], [1]]]), axis=2),
    "quantile-style-gather": lambda x: jax.lax.gather(x, jnp.array([1]), QUANTILE_DIMS, (2, 1, 4)),
    "gather-windows-clamped": lambda x: jax.lax.gather(x, jnp.array([[0, 1], [2, 3]]), WINDOW_DIMS, (2, 2, 2),
                                                       mode="clip"),
    "advanced-indexing-apart": lambda x: x[np.array([1, 0]), :, np.array([2, 3])],
    "advanced-indexing-pair": lambda x: x[:, np.array([[0, 2], [1, 1]]), np.array([3, 0])],
    "diagonal": lambda x: ops.diagonal(x, axis1=1, axis2=2),
    "diagonal-offset": lambda x: ops.diagonal(x, offset=1, axis1=2, axis2=0),
    "dynamic-slice-window": lambda x: jax.lax.dynamic_slice(x, (0, 1, 2), (2, 2, 2)) * 2,
    "scatter": lambda x: x[:, :, :2] + ops.scatter(np.array([[0, 1], [1, 2], [0, 1]]), np.ones((3, 2)), (2, 3, 2)),
    "scatter-update": lambda x: ops.scatter_update(x, np.array([[0, 1], [1, 2]]), ops.ones((2, 4)) * 5),
    "scatter-update-elements": lambda x: ops.scatter_update(x, np.array([[0, 1, 3], [1, 0, 0]]), x[0, 0, :2]),
    "slice-update": lambda x: ops.slice_update(x, (0, 1, 1), x[:1, :2, :2] * 3),
    "at-set": lambda x: jnp.asarray(x).at[:, PICK[:2]].set(x[:, 0:2] * 4),
    "at-add-duplicates": lambda x: jnp.asarray(x).at[np.array([1, 1, 0]), 2].add(x[0]),
    "at-multiply": lambda x: jnp.asarray(x).at[:, np.array([0, 2, 0])].multiply(2.5),
    "at-max": lambda x: jnp.asarray(x).at[:, np.array([0, 2, 0]), 1:3].max(x[:, :3, :2] * 3),
    "at-min": lambda x: jnp.asarray(x).at[np.array([1, 1]), 1:3].min(x[0, :2, :] * 2),
    "dynamic-slice-runtime-start": lambda x: jax.lax.dynamic_slice(x, (0, _flag(x), _flag(x) + 5), (2, 2, 2)),
    "slice-runtime-start": lambda x: ops.slice(x, ops.stack([_flag(x), _flag(x), 1]), (1, 2, 3)),
    "slice-update-runtime-start": lambda x: ops.slice_update(x, (_flag(x), 1, _flag(x) + 1), x[:1, :2, :2] * 3),
    "segment-sum": lambda x: ops.segment_sum(x[0], np.array([0, 2, 2]), num_segments=3),
    "segment-max": lambda x: ops.segment_max(x[0], np.array([0, 2, 2]), num_segments=3),
    "segment-sum-runtime-ids": lambda x: ops.segment_sum(x[0], ops.cast(x[0, :, 0] > 0, "int32"), num_segments=2),
    "diag": lambda x: ops.diag(x[0, 0]) + ops.diag(x[0], k=1)[0],
    "trace": lambda x: ops.trace(x, axis1=1, axis2=2),
    "take-along-runtime-index": lambda x: ops.take_along_axis(x, ops.argmax(x, axis=1, keepdims=True), axis=1),
    "at-runtime-index": lambda x: jnp.asarray(x).at[:, ops.cast(x[0, :, 0] > 9, "int32")].add(1.0),
}


def check_traced(fn, x, target):
    """Lower ``Traced(fn)`` on ``x``, compare the IR reference and ``target``'s emitted model with Keras."""
    model = Traced(fn)
    want = np.asarray(model(x))
    graph = validate(lower_keras_subclassed(model, [x]))
    ref = run_reference(graph, [x])[graph.outputs[0]]
    assert ref.shape == want.shape, f"reference gives {ref.shape}, Keras {want.shape}"
    assert compare_arrays(want, ref, 1e-5, 1e-5)["passed"]
    got, _ = emit_and_run(graph, [x], target)
    row = compare_arrays(want, np.asarray(got[0]), 1e-5, 1e-5)
    assert row["passed"], f"{target}: {row}"
    return graph


@pytest.mark.parametrize("case", sorted(CASES))
def test_keras_gather_and_scatter(target, case):
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    graph = check_traced(CASES[case], x, target)
    assert {n.op.name for n in graph.nodes} & {"index_select", "gather", "embedding", "scatter", "scatter_reduce",
                                                "slice", "concat", "where"}, case


@pytest.mark.parametrize("name, fn", [("median", lambda x: ops.median(x, axis=1)),
                                      ("quantile", lambda x: ops.quantile(x, 0.3, axis=2)),
                                      ("percentile", lambda x: ops.percentile(x, 75, axis=2, method="nearest"))])
def test_keras_median_and_quantile(target, name, fn):
    """They gather single slices of the sorted values (the gather that gave 2x1x4 for a 2x4 result)."""
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    graph = check_traced(fn, x, target)
    assert graph.outputs[0].type.shape == np.shape(fn(x)), name
