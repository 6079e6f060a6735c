"""Fuzzing: random valid IR graphs through validation, text/serde round trips, passes and both emitters.

``tests/support/fuzz_graphs.graphs()`` builds DAGs of 1..6 op applications drawn from every op family (unary,
binary with broadcasting, where, cast, linear/matmul, conv/conv_transpose, pooling, resize,
normalization, reductions, softmax, attention, embedding, shape and indexing ops) with tiny
shapes and random attributes (families in tests/support/fuzz_{families,layers,shapes}.py).
Each graph is validated, round-tripped through the text form and ``save_graph``/``load_graph``,
emitted as Keras (JAX) code and as PyTorch (torch-xla), loaded the way a user would, run on seeded
inputs and compared with the ops' NumPy references at float32 tolerances. One Keras variant runs the
keras-jax pass pipeline first (and the model under jax.jit); the passes must leave the reference
results unchanged. Random graphs reach IR forms the torch frontend never produces (asymmetric pads,
one-sided affine norms, computed weights, odd pad layouts), so this is where the IR-only branches of
the emit rules are exercised.

The normal run uses the hypothesis profile "ci" (8 examples per test, derandomized). For a
longer hunt (profile "fuzz", 200 random examples per test, a few minutes):

    PORTX_FUZZ=1 ./scripts/test tests/test_fuzz.py

A failure prints the graph as text IR; paste it into ``FOUND`` / ``PASSES_FOUND`` below (the
graphs the fuzzer found so far) once the bug is fixed.
"""
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from portx.ir import format_graph, load_graph, parse_graph, save_graph, validate
from portx.passes.legalize import legalize
from portx.passes.pipeline import run_passes
from portx.targets.codegen import import_by_path
from portx.targets.keras_jax.emitter import emit_keras
from portx.targets.keras_jax.runtime import run_jitted
from portx.targets.torch_xla.runtime import run_torch
from portx.verification.compare import compare_arrays, make_inputs, run_reference
from tests.support.fuzz_graphs import graphs
from tests.support.harness import TARGETS, check_torch_op, emit_and_load

# Each example builds and runs a Keras model (0.1-2 s), and a few are rejected on purpose
# (meaningful_reference): neither is a problem of the strategy.
FUZZ = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def reference_outputs(graph, arrays) -> list:
    """The NumPy reference value of each graph output."""
    env = run_reference(graph, arrays)
    return [env[v] for v in graph.outputs]


def meaningful_reference(graph, arrays) -> list:
    """``reference_outputs``, rejecting examples with an all-NaN output (a vacuous comparison).

    E.g. a dilated max_pool window that covers only padding gives -inf, as in torch, and a norm of it NaN.
    """
    expected = reference_outputs(graph, arrays)
    if any(e.size and np.issubdtype(e.dtype, np.floating) and np.isnan(e).all() for e in expected):
        reject()
    return expected


def keras_outputs(graph, arrays, jitted=False) -> list:
    """Emit ``graph`` as Keras code, load it as a user would, and run it on ``arrays``.

    ``jitted`` runs it under ``jax.jit`` as ``portx convert`` verifies it; else eagerly, op by op.
    Emitters see only legal IR, so the op-table step runs first (it keeps dtypes and values).
    """
    with tempfile.TemporaryDirectory() as tmp:
        emit_keras(legalize(graph, "keras-jax"), tmp)
        model = import_by_path(Path(tmp) / "model.py").load_model()
        if jitted:
            return run_jitted(model, arrays)
        out = model(arrays if len(arrays) > 1 else arrays[0])
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def torch_outputs(graph, arrays) -> list:
    """Legalize and emit ``graph`` as PyTorch, load it with load_model() and run it on ``arrays``."""
    with tempfile.TemporaryDirectory() as tmp:
        model, _ = emit_and_load(legalize(graph, "torch-xla"), tmp)
        return run_torch(model, arrays)


OUTPUTS = {"keras-jax": keras_outputs, "torch-xla": torch_outputs}


def assert_outputs_match(graph, expected, got, atol=1e-5, rtol=1e-4, what="keras"):
    """Each output within tolerance; the message names the output and shows the graph."""
    assert len(got) == len(expected), f"{what}: {len(got)} outputs, expected {len(expected)}"
    for value, want, have in zip(graph.outputs, expected, got):
        row = compare_arrays(want, have, atol, rtol)
        assert row["passed"], f"{what} vs reference, output %{value.name}: {row}\n{format_graph(graph)}"


@FUZZ
@given(graphs())
def test_random_graph_round_trips_and_passes_keep_reference(graph):
    """validate, text and save/load round trips, and the keras-jax passes, on the reference alone."""
    validate(graph)
    text = format_graph(graph)
    assert format_graph(parse_graph(text)) == text
    arrays = make_inputs(graph, seed=0)
    expected = meaningful_reference(graph, arrays)
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_graph(save_graph(graph, tmp))
    assert format_graph(loaded) == text
    assert all(np.array_equal(graph.params[n], loaded.params[n]) for n in graph.params)
    assert_outputs_match(graph, expected, reference_outputs(loaded, arrays), 0.0, 0.0, "loaded graph")
    passed = run_passes(graph, "keras-jax", skip=())  # every pass, --inference's too
    retyped = [a.astype(v.type.dtype, copy=False) for a, v in zip(arrays, passed.inputs)]
    # fold_batch_norm changes the rounding (weights pre-multiplied): float32 tolerances, not bit equality
    assert_outputs_match(graph, expected, reference_outputs(passed, retyped), what="after passes")


@FUZZ
@given(graphs(), st.booleans())
def test_random_graph_emits_keras_matching_reference(graph, with_passes):
    """The emitted Keras model computes what the NumPy references compute.

    Either as emitted and run eagerly, or after the keras-jax passes and under jax.jit (the path
    ``portx convert`` takes).
    """
    arrays = make_inputs(validate(graph), seed=0)
    expected = meaningful_reference(graph, arrays)
    if with_passes:
        graph = run_passes(graph, "keras-jax", skip=())
        arrays = [a.astype(v.type.dtype, copy=False) for a, v in zip(arrays, graph.inputs)]
    assert_outputs_match(graph, expected, keras_outputs(graph, arrays, jitted=with_passes))


@FUZZ
@given(graphs())
def test_random_graph_emits_torch_matching_reference(graph):
    """The emitted PyTorch module (torch-xla, loaded with load_model()) computes what the NumPy references compute."""
    arrays = make_inputs(validate(graph), seed=0)
    expected = meaningful_reference(graph, arrays)
    assert_outputs_match(graph, expected, torch_outputs(graph, arrays), what="torch-xla")


# -- regressions: graphs the fuzzer found, as text IR ---------------------------------------------
FOUND = {
    # batch statistics with a bias but no weight: keras' symbolic ops.batch_normalization crashed
    # on offset without scale (fixed in ops/norm.py: the scale becomes ones_like(mean)).
    "batch-norm-bias-without-weight": """
        graph model(%x: float32[2x3x4]) {
          param %bn.bias: float32[3]
          %m: float32[3] = mean(%x) {axes=(0, 2), keepdims=False}
          %v: float32[3] = var(%x) {axes=(0, 2), correction=0.0, keepdims=False}
          %y: float32[2x3x4] = batch_norm(%x, _, %bn.bias, %m, %v) {eps=1e-05}
          return %y
        }""",
    # an output that is a stored array (the model returns a folded constant): small arrays were
    # inlined as np.array, which Keras rejects as a model output (fixed in emitters/keras_jax.py).
    # a stored 0-d item is written as a Python number, which symbolic ops.stack rejected
    # (torch.stack([x.sum(), torch.tensor(2.0)]); fixed in ops/shape.py)
    "stack-zero-d-constant": """
        graph model(%x: float32[2]) {
          param %c: float32[scalar]
          %s: float32[scalar] = select(%x) {axis=0, index=1}
          %y: float32[3] = stack(%s, %c, %s) {axis=0}
          return %y
        }""",
    "stored-array-outputs": """
        graph model(%x: float32[2x3]) {
          param %w: float32[3]
          param %s: float32[scalar]
          param %mask: bool[3]
          %y: float32[2x3] = add(%x, %w) {}
          return %y, %w, %s, %mask
        }""",
}


# graphs the torch-xla fuzzer found (the fixes are in the torch-xla rules)
TORCH_FOUND = {
    # a 0-d input became 1-d on its way into torch (np.ascontiguousarray; fixed in emitters/torch_xla.py)
    "zero-d-input": """
        graph model(%x: float32[scalar]) {
          %y: bool[scalar] = lt(%x, %x) {}
          return %y
        }""",
    # torch's group_norm refuses one value per group at batch 1; written as a layer_norm per group
    "group-norm-one-value-per-group": """
        graph model(%x: float32[1x7]) {
          param %gn.weight: float32[7]
          param %gn.bias: float32[7]
          %y: float32[1x7] = group_norm(%x, %gn.weight, %gn.bias) {groups=7, eps=1e-05}
          return %y
        }""",
    # torch has no reflection/replication pad for bool tensors: an index gather instead
    "reflect-pad-bool": """
        graph model(%x: bool[2x3x2]) {
          %y: bool[2x5x2] = pad(%x) {pads=((0, 0), (1, 1), (0, 0)), mode="reflect", value=0.0}
          return %y
        }""",
    # max_pool1d checks its padding against the undilated kernel (3 // 2 < 2): explicit -inf pad
    "max-pool1d-dilated-wide-pad": """
        graph model(%x: float32[1x5x4]) {
          %y: float32[1x5x2] = max_pool(%x) {kernel=(3,), stride=(2,), pads=((2, 2),), dilation=(2,), ceil_mode=False}
          return %y
        }""",
}


ALL_FOUND = {**FOUND, **TORCH_FOUND}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("text", ALL_FOUND.values(), ids=ALL_FOUND.keys())
def test_found_graph_matches_reference(text, target):
    """A graph a fuzzer found: each target's emitted model matches the references."""
    graph = validate(parse_graph(text))
    arrays = make_inputs(graph, seed=0)
    assert_outputs_match(graph, reference_outputs(graph, arrays), OUTPUTS[target](graph, arrays), what=target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [lambda x: x.sum() + 1, lambda x: (x * 2, x.mean() * 3)],
                         ids=["sum-plus-one", "mean-times-three"])
def test_zero_d_constants_stay_zero_d(fn, target):
    """0-d constants were stored as shape (1,) (np.ascontiguousarray), so ``x.sum() + 1`` had type
    float32[1] where torch has float32[scalar] and the import failed (fixed in frontends/torch/__init__.py)."""
    check_torch_op(fn, np.ones((2, 3), np.float32), target=target)


PASSES_FOUND = {
    # fold_batch_norm dropped a conv whose output the model also returns (fixed in passes/fold.py).
    "fold-keeps-returned-conv": """
        graph model(%x: float32[1x2x4x4]) {
          param %c.weight: float32[3x2x1x1]
          param %bn.running_mean: float32[3]
          param %bn.running_var: float32[3]
          %c: float32[1x3x4x4] = conv(%x, %c.weight) {stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1}
          %y: float32[1x3x4x4] = batch_norm(%c, _, _, %bn.running_mean, %bn.running_var) {eps=1e-05}
          return %y, %c
        }""",
    # a weight shared by two conv + batch_norm pairs: both folded copies got the same parameter
    # name, so one pair read the other's (fixed in passes/fold.py: fresh names).
    "fold-shared-conv-weight": """
        graph model(%x: float32[1x2x4x4]) {
          param %c.weight: float32[3x2x1x1]
          param %bn1.running_mean: float32[3]
          param %bn1.running_var: float32[3]
          param %bn2.running_mean: float32[3]
          param %bn2.running_var: float32[3]
          %c1: float32[1x3x4x4] = conv(%x, %c.weight) {stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1}
          %y1: float32[1x3x4x4] = batch_norm(%c1, _, _, %bn1.running_mean, %bn1.running_var) {eps=1e-05}
          %c2: float32[1x3x4x4] = conv(%x, %c.weight) {stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1}
          %y2: float32[1x3x4x4] = batch_norm(%c2, _, _, %bn2.running_mean, %bn2.running_var) {eps=1e-05}
          return %y1, %y2
        }""",
    # greedy decoding, torch.cat([ids, logits.argmax(-1, keepdim=True)], 1): int64 narrowing made the
    # ids int32 but left argmax int64, so the concat failed validation (fixed in passes/legalize/dtypes.py).
    "int64-ids-join-argmax": """
        graph model(%ids: int64[1x3], %logits: float32[1x5]) {
          %next: int64[1x1] = argmax(%logits) {axis=1, keepdims=True}
          %out: int64[1x4] = concat(%ids, %next) {axis=1}
          return %out
        }""",
}


@pytest.mark.parametrize("text", PASSES_FOUND.values(), ids=PASSES_FOUND.keys())
def test_found_graph_after_passes_matches_reference(text):
    """A graph the fuzzer found: after the passes, Keras still matches the references."""
    variances = {f"{bn}.running_var": np.full(3, v, np.float32) for bn, v in (("bn", 1.0), ("bn1", 0.5), ("bn2", 2.0))}
    graph = validate(parse_graph(text, variances))
    arrays = make_inputs(graph, seed=0)
    expected = reference_outputs(graph, arrays)
    graph = run_passes(graph, "keras-jax", skip=())  # --inference: fold_batch_norm runs too
    arrays = [a.astype(v.type.dtype, copy=False) for a, v in zip(arrays, graph.inputs)]
    assert_outputs_match(graph, expected, keras_outputs(graph, arrays))
