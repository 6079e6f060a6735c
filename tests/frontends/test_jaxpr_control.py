"""JAX control flow through the jaxpr frontend (Note [jaxpr control flow]): scan and static while loops unrolled,
cond / switch on a run-time index lowered to ``where``; each graph is emitted as torch and compared with JAX on
inputs that take every path. Over-long loops are refused with exit 3, data-dependent loops with exit 4.

Example:
    pytest tests/frontends/test_jaxpr_control.py -k switch
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from portx.errors import NotTpuLegal, UnsupportedOps
from portx.frontends.jax import lower_jaxpr
from portx.frontends.jax.control import MAX_UNROLLED_EQUATIONS
from portx.ir import validate
from portx.passes.pipeline import run_passes
from portx.targets.torch_xla.runtime import run_torch
from portx.verification.compare import run_reference
from tests.support.harness import emit_and_load
from tests.support.unsupported import JAX_PRIMITIVE, jax_unsupported

__all__ = []


def _seeded(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _convert_and_compare(fn, weights, inputs_list, tmp_path):
    """Lower ``fn(*weights, *inputs)`` from its jaxpr, emit torch once, and compare the IR reference and the torch
    module with JAX on every input tuple of ``inputs_list``."""
    closed = jax.make_jaxpr(fn)(*weights, *inputs_list[0])
    names = [f"x{i}" for i in range(len(inputs_list[0]))]
    graph = validate(lower_jaxpr(closed, names, [(f"w{i}", w) for i, w in enumerate(weights)]))
    model, _ = emit_and_load(run_passes(graph, "torch-xla"), tmp_path)
    for inputs in inputs_list:
        want = [np.asarray(o) for o in jax.tree.leaves(fn(*weights, *inputs))]
        reference = run_reference(graph, list(inputs))
        for value, expected, got in zip(graph.outputs, want, run_torch(model, list(inputs))):
            np.testing.assert_allclose(reference[value], expected, atol=1e-5, rtol=1e-5)
            np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5, err_msg=value.name)
    return graph


def _ops(graph):
    return [node.op.name for node in graph.nodes]


def test_scan_reverse_with_consts_and_two_carries(tmp_path):
    def fn(w, x):
        def step(carry, xt):
            h, total = carry
            h = jnp.tanh(h @ w + xt)
            return (h, total + h.sum()), h * 2.0
        (h, total), ys = lax.scan(step, (jnp.zeros(4), jnp.zeros(())), x, reverse=True)
        return h, total, ys

    graph = _convert_and_compare(fn, [_seeded((4, 4), 1)], [(_seeded((5, 4), 2),)], tmp_path)
    assert _ops(graph).count("tanh") == 5 and "stack" in _ops(graph)


def test_fori_loop_unrolls_and_its_counter_folds(tmp_path):
    def fn(x):
        return lax.fori_loop(0, 4, lambda i, a: a * 0.5 + i.astype(jnp.float32), x)

    graph = _convert_and_compare(fn, [], [(_seeded((2, 3), 3),)], tmp_path)
    assert _ops(graph).count("mul") == 4 and not any(v.type.dtype == "int32" for v in graph.inputs)


def test_while_loop_on_a_counter_is_static(tmp_path):
    def fn(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x))[1]

    graph = _convert_and_compare(fn, [], [(_seeded((2, 3), 4),)], tmp_path)
    assert _ops(graph).count("sin") == 3


def test_cond_on_a_traced_predicate_takes_either_branch(tmp_path):
    def fn(x):
        return lax.cond(x.sum() > 0, lambda a: a * 2.0, lambda a: jnp.exp(a) - 1.0, x)

    x = _seeded((3, 4), 5)
    graph = _convert_and_compare(fn, [], [(np.abs(x),), (-np.abs(x),)], tmp_path)
    assert "where" in _ops(graph)


def test_switch_with_three_branches_picks_by_index(tmp_path):
    def fn(x):
        index = (x[0, 0] > 0).astype(jnp.int32) + (x[0, 1] > 0).astype(jnp.int32)
        return lax.switch(index, [lambda a: a + 1.0, lambda a: a * a, lambda a: jnp.cos(a)], x)

    x = np.abs(_seeded((2, 3), 6)) + 0.1
    cases = [x * np.array([[s0, s1, 1]], np.float32) for s0, s1 in ((-1, -1), (1, -1), (1, 1))]
    _convert_and_compare(fn, [], [(c,) for c in cases], tmp_path)


def test_a_scan_too_long_to_unroll_is_refused_with_exit_3():
    def fn(x):
        return lax.scan(lambda c, xt: (c * 0.9 + xt, c), jnp.zeros(4), x)[1]

    closed = jax.make_jaxpr(fn)(np.zeros((MAX_UNROLLED_EQUATIONS + 1, 4), np.float32))
    with pytest.raises(UnsupportedOps, match="MAX_UNROLLED_EQUATIONS") as info:
        lower_jaxpr(closed, ["x"], {})
    assert info.value.exit_code == 3 and "scan" in str(info.value)


def test_a_data_dependent_while_is_refused_with_exit_4():
    def fn(x):
        return lax.while_loop(lambda a: a.sum() < 100.0, lambda a: a * 2.0, x)

    closed = jax.make_jaxpr(fn)(np.ones((2, 2), np.float32))
    with pytest.raises(NotTpuLegal, match="while at <top>.*data-dependent") as info:
        lower_jaxpr(closed, ["x"], {})
    assert info.value.exit_code == 4 and "fori_loop" in str(info.value)


def test_an_unsupported_op_in_a_loop_body_is_reported_once():
    def fn(x):
        return lax.scan(lambda c, xt: (c + jax_unsupported(xt), c), jnp.zeros(4), x)[1]

    closed = jax.make_jaxpr(fn)(np.zeros((6, 4), np.float32))
    with pytest.raises(UnsupportedOps, match=f"1 unsupported op: {JAX_PRIMITIVE} at <top>") as info:
        lower_jaxpr(closed, ["x"], {})
    assert "(x" not in str(info.value) and info.value.exit_code == 3
