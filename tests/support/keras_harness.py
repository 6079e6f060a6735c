"""Layer-level check for the Keras frontend, for both targets: Keras (JAX) output vs the IR's NumPy reference
and vs the emitted model.

``check_keras_model(model, *arrays, target=...)`` wraps the model as a KerasSource, lowers it, validates
the graph and compares every output of ``run_reference`` with Keras' own at ``atol``; then it runs the
target's passes and emitter (``harness.emit_and_run``: model.py and weights, loaded as a user would) and
compares the emitted model with Keras as well. Weights are re-drawn from a fixed seed first
(``randomize_weights``), so biases, BN statistics and PReLU alphas are not the trivial initial zeros/ones.
It is the Keras-source twin of ``harness.check_torch_op`` (Note [both targets] in harness.py).
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import portx.ops  # noqa: E402,F401  (registers rules)
from portx.frontends.keras.files import from_keras_model  # noqa: E402
from portx.ir import validate  # noqa: E402
from portx.verification.compare import compare_arrays, run_reference  # noqa: E402
from tests.support.harness import emit_and_run  # noqa: E402

__all__ = ["APPLICATIONS", "build_application", "redraw_batch_norms", "check_keras_layer", "check_keras_model",
           "keras_case", "randomize_weights", "seeded", "single_layer"]


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


def check_keras_model(model, *arrays, target, atol=1e-5, rtol=1e-5, specs=(), randomize=True, emit_rtol=1e-4):
    """Lower ``model`` and compare the IR reference with Keras on ``arrays``; then emit ``target`` (its passes,
    ``model.py`` and weights, loaded as a user would) and compare that model with Keras too (``atol``,
    ``emit_rtol``). Returns the graph.

    Example: ``check_keras_model(single_layer(L.Dense(4), (3,)), seeded((1, 3)), target="torch-xla")``.
    """
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
    emitted, _ = emit_and_run(graph, list(arrays), target)
    assert len(emitted) == len(expected), f"{target}: {len(emitted)} outputs, Keras has {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, emitted)):
        result = compare_arrays(e, np.asarray(g), atol, emit_rtol)
        assert result["passed"], f"emitted {target}, output {i} ({graph.outputs[i].name}): {result}"
    return graph


def keras_case(make, *shapes, id, **options):
    """A row of a family's Keras case table: a layer factory, its batchless input shapes and the
    ``check_keras_layer`` options. Example: ``keras_case(lambda: L.Dense(4), (3,), id="Dense")``."""
    return pytest.param(make, shapes, options, id=id)


def check_keras_layer(make, shapes, *, target, seed=None, **options):
    """``make()`` as a one-layer model on seeded batch-1 inputs of the batchless ``shapes``, through
    ``check_keras_model``; ``seed`` seeds Keras before the layer is made (its own initial weights).

    Example: ``check_keras_layer(lambda: L.Conv2D(4, 3), [(6, 6, 3)], target="keras-jax")``.
    """
    if seed is not None:
        keras.utils.set_random_seed(seed)
    model = single_layer(make(), *shapes)
    arrays = [seeded((1,) + tuple(s), seed=i) for i, s in enumerate(shapes)]
    return check_keras_model(model, *arrays, target=target, **options)


#: keras.applications constructor name -> (input side, RTOL against Keras, pixel range, slow).
#: The smallest input each accepts with ``include_top=False`` (Xception 71, InceptionV3 75, else 32).
#: RTOL is 2e-5 for the deepest graphs (DenseNet121, InceptionV3, NASNetMobile), 1e-5 otherwise.
APPLICATIONS = {
    "MobileNetV2": (32, 1e-5, 1.0, False),
    "ResNet50": (32, 1e-5, 1.0, False),
    "MobileNetV3Small": (32, 1e-5, 255.0, True),
    "EfficientNetB0": (32, 1e-5, 255.0, True),
    "EfficientNetV2B0": (32, 1e-5, 255.0, True),
    "DenseNet121": (32, 2e-5, 1.0, True),
    "ConvNeXtTiny": (32, 1e-5, 255.0, True),
    "Xception": (71, 1e-5, 1.0, True),
    "InceptionV3": (75, 2e-5, 1.0, True),
    "NASNetMobile": (32, 2e-5, 1.0, True),
}


def redraw_batch_norms(model, seed=0):
    """Seeded BN statistics and affine weights, kept near their usual scale so activations stay O(1)."""
    rng = np.random.default_rng(seed)
    draws = {"moving_mean": lambda s: rng.normal(0, 0.1, s), "moving_variance": lambda s: rng.uniform(0.5, 1.5, s),
             "beta": lambda s: rng.normal(0, 0.1, s)}
    for var in model.weights:
        leaf, shape = var.path.split("/")[-1], tuple(var.shape)
        if leaf == "gamma" and "layer_scale" not in var.path:
            var.assign(rng.uniform(0.8, 1.2, shape).astype(np.float32))
        elif leaf in draws:
            var.assign(draws[leaf](shape).astype(np.float32))


def build_application(name):
    """(model, x): keras.applications ``name`` (weights=None, include_top=False, seed 0) with BN statistics
    redrawn (fresh ones are the identity) and a seeded input batch in its pixel range.

    Example: ``model, x = build_application("MobileNetV2")``; ``x.shape == (1, 32, 32, 3)``.
    """
    side, _, pixels, _ = APPLICATIONS[name]
    keras.utils.set_random_seed(0)
    model = getattr(keras.applications, name)(weights=None, include_top=False, input_shape=(side, side, 3))
    redraw_batch_norms(model)
    x = np.random.default_rng(0).uniform(0, pixels, (1, side, side, 3)).astype(np.float32)
    return model, x
