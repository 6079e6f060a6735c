"""Layer-level check for the Keras frontend: Keras (JAX) output vs the IR's NumPy reference.

``check_keras_model(model, *arrays)`` wraps the model as a KerasSource, lowers it, validates the
graph and compares every output of ``run_reference`` with Keras' own at ``atol``. Weights are
re-drawn from a fixed seed first (``randomize_weights``), so biases, BN statistics and PReLU alphas
are not the trivial initial zeros/ones.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import portx.ops  # noqa: E402,F401  (registers rules)
from portx.equivalence import compare_arrays, run_reference  # noqa: E402
from portx.frontends.keras_files import from_keras_model  # noqa: E402
from portx.ir import validate  # noqa: E402

__all__ = ["check_keras_model", "randomize_weights", "seeded", "single_layer"]


def seeded(shape, seed=0, scale=1.0):
    """Seeded float32 normal array."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def randomize_weights(model, seed=0):
    """Every float weight re-drawn (variances positive), deterministic per seed."""
    rng = np.random.default_rng(seed)
    for var in model.weights:
        if "float" not in str(var.dtype):
            continue
        shape = tuple(var.shape)
        if var.name.endswith("variance"):
            value = rng.uniform(0.5, 1.5, shape)
        else:
            value = rng.standard_normal(shape) * 0.5
        var.assign(value.astype(np.float32))


def single_layer(layer, *shapes):
    """A functional model applying ``layer`` to Inputs of the given (batchless) shapes."""
    inputs = [keras.Input(s) for s in shapes]
    out = layer(inputs if len(inputs) > 1 else inputs[0])
    return keras.Model(inputs, out)


def check_keras_model(model, *arrays, atol=1e-5, rtol=1e-5, specs=(), randomize=True):
    """Lower ``model`` and compare the IR reference with Keras on ``arrays``; returns the graph."""
    if randomize:
        randomize_weights(model)
    src = from_keras_model(model, specs)
    graph = src.lower("model")
    validate(graph)
    expected = src.run(*arrays)
    values = run_reference(graph, list(arrays))
    got = [values[v] for v in graph.outputs]
    assert len(got) == len(expected), (len(got), len(expected))
    for i, (e, g) in enumerate(zip(expected, got)):
        result = compare_arrays(e, g, atol, rtol)
        assert result["passed"], f"output {i} ({graph.outputs[i].name}): {result}"
    return graph
