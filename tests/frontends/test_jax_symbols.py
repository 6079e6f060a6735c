"""Note [jax symbols] (frontends/jax/symbols.py): a subclassed Keras model is traced and lowered once; its free dims
come from a second, symbolic trace matched to the first equation by equation, not from a second lowering. A spy on
the lowering counts the walks; the emitted models run at other batch sizes (and image sizes) and match the source
on both targets. A model JAX cannot trace symbolically falls back to two lowerings and the report says why."""
import jax
import numpy as np
import pytest

import portx
import portx.frontends.keras.subclassed as subclassed
from portx.frontends.jax.symbols import Mismatch, compact, match_jaxprs, read_symbols, symbolic_specs
from portx.targets import find_target
from tests.support.zoo_traced import Encoder, Mlp, NeedsInt, Pooled, Rows, UNet, built as _built
from tests.support.counting import counted

TARGETS = ["keras-jax", "torch-xla"]


@pytest.fixture
def lowerings(monkeypatch):
    """The number of times a conversion lowers (walks) a traced jaxpr."""
    return counted(monkeypatch, subclassed, "lower_jaxpr")


def _found(report):
    return {r["symbol"]: (r["free"], r.get("found_by")) for r in report["dynamic"]}


def _matches(result, to, model, shapes):
    for k, shape in enumerate(shapes):
        x = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
        got = find_target(to).run(result.model, [x])[0]
        np.testing.assert_allclose(got, np.asarray(model(x)), rtol=1e-4, atol=1e-4, err_msg=str(shape))


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("make, shape", [(Mlp, (2, 12)), (Rows, (3, 6)), (Pooled, (2, 5, 6))],
                         ids=["mlp", "reshape-by-batch", "indexing"])
def test_the_batch_is_read_from_symbols_after_one_lowering(make, shape, to, lowerings, tmp_path):
    model = _built(make, shape)
    result = portx.convert(model, example_inputs=(np.ones(shape, np.float32),), to=to, out=tmp_path / "o",
                           grad=False)
    assert lowerings[0] == 1, lowerings
    assert _found(result.report) == {"batch": (True, "symbolic export")}, result.report["warnings"]
    _matches(result, to, model, [(n, *shape[1:]) for n in (1, 3, 8)])


@pytest.mark.parametrize("to", TARGETS)
def test_a_divided_image_size_is_read_from_symbols(to, lowerings, tmp_path):
    model = _built(UNet, (2, 8, 12, 3))
    result = portx.convert(model, example_inputs=(np.ones((2, 8, 12, 3), np.float32),), to=to, out=tmp_path / "o",
                           grad=False, dynamic=["x:1", "x:2"])
    assert lowerings[0] == 1, lowerings
    assert _found(result.report) == {"batch": (True, "symbolic export"), "x_1": (True, "symbolic export"),
                                     "x_2": (True, "symbolic export")}, result.report["warnings"]
    assert any("x_1 stays free at 8 plus multiples of 2" in w for w in result.report["warnings"])
    _matches(result, to, model, [(1, 8, 12, 3), (3, 10, 14, 3), (8, 6, 10, 3)])


@pytest.mark.slow  # about a minute: verified at three batch sizes and two lengths
def test_an_attention_encoder_keeps_batch_and_sequence_free_from_one_lowering(lowerings, tmp_path):
    model = _built(lambda: Encoder(blocks=1, dim=16), (2, 12, 16))
    result = portx.convert(model, example_inputs=(np.ones((2, 12, 16), np.float32),), to="keras-jax",
                           out=tmp_path / "o", grad=False, dynamic=["x:1"])
    assert lowerings[0] == 1, lowerings
    assert _found(result.report) == {"batch": (True, "symbolic export"), "x_1": (True, "symbolic export")}, \
        result.report["warnings"]
    _matches(result, "keras-jax", model, [(1, 5, 16), (3, 12, 16), (8, 19, 16)])


@pytest.mark.parametrize("to", TARGETS)
def test_a_model_jax_cannot_trace_symbolically_is_lowered_twice_and_said_so(to, lowerings, tmp_path):
    model = _built(NeedsInt, (3, 6))
    result = portx.convert(model, example_inputs=(np.ones((3, 6), np.float32),), to=to, out=tmp_path / "o",
                           grad=False)
    assert _found(result.report) == {"batch": (True, "two lowerings")}, result.report["warnings"]
    assert lowerings[0] == 2
    said = [w for w in result.report["warnings"] if w.startswith("x:0 found by two lowerings")]
    assert said and "JAX cannot trace it with a symbolic size" in said[0], result.report["warnings"]
    _matches(result, to, model, [(n, 6) for n in (1, 3, 8)])


def test_traces_that_take_different_paths_do_not_match():
    """A Python branch on a size: at (2, 2) the sizes are equal and nothing is reshaped; with (2, d) JAX cannot
    prove them equal and reshapes. Mismatch names where the two traces part."""
    def f(x):
        return jax.numpy.reshape(x, (x.shape[1], x.shape[0])) if x.shape[0] != x.shape[1] else x

    x = np.zeros((2, 2), np.float32)
    static, symbolic = jax.make_jaxpr(f)(x), jax.make_jaxpr(f)(*symbolic_specs([x], [(0, 1)]))
    with pytest.raises(Mismatch, match=r"0 equations at static sizes, 1 with symbols, from <top> \(reshape\) on"):
        match_jaxprs(static, symbolic, 2)


def test_an_indexing_slice_is_paired_with_the_gather_jax_writes_with_symbols():
    """Note [indexing with symbols]: ``x[:, 0]`` is slice + squeeze at static sizes, a gather with symbols."""
    def f(x):
        return x[:, 0] * 2

    x = np.zeros((4, 3), np.float32)
    static, symbolic = jax.make_jaxpr(f)(x), jax.make_jaxpr(f)(*symbolic_specs([x], [(0, 0)]))
    assert "gather" in str(symbolic) and "gather" not in str(static)
    found = read_symbols(static, symbolic, compact((e, [None] * len(e.outvars)) for e in static.jaxpr.eqns), [], 4)
    assert found.hints(6)["literals"][4] == {6}


def test_a_symbolic_trace_gives_each_value_its_shape_at_another_size():
    def f(x):
        y = jax.lax.reduce_window(x * 2, 0.0, jax.lax.add, (2, 1), (2, 1), "VALID")  # floordiv(d - 2, 2) + 1 rows
        return jax.numpy.reshape(y, (y.shape[0] * 4,))

    x = np.zeros((6, 4), np.float32)
    static, symbolic = jax.make_jaxpr(f)(x), jax.make_jaxpr(f)(*symbolic_specs([x], [(0, 0)]))
    record = compact((eqn, [None] * len(eqn.outvars)) for eqn in static.jaxpr.eqns)
    found = read_symbols(static, symbolic, record, [], 6)
    assert found.divisor() == 2
    assert found.hints(8)["literals"] == {6: {8}, 3: {4}, 12: {16}}
