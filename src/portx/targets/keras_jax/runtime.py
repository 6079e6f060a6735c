"""Running a written Keras-JAX model: load it as a user would, run it jitted, and observe its intermediates.

Example:
    >>> model = load_folder("out/")                 # what out/model.py's load_model() returns
    >>> outputs = run_jitted(model, [x])            # one XLA compile, weights as arguments
    >>> observe_locals("out/model.py", [x], {"block_0"})["block_0"].shape
"""
from __future__ import annotations

import sys
import tempfile
import weakref
from pathlib import Path

import numpy as np

from ...weights import release_all
from ...weights.heap import trim_heap
from ..codegen import flatten_outputs, import_by_path
from .cheap_init import cheap_initializers
from .cpu_dots import widened_dots
from .emitter import WEIGHTS_FILE, KerasEmitter
from .sharded import abstract_model, given_layers

__all__ = ["load_folder", "build_in_memory",
           "jitted", "forget_compiles", "run_jitted", "build_with_locals", "observe_locals",
           "observe_layers"]


def load_folder(path):
    """The Keras model written in ``path`` (an OUT folder or its model.py), weights loaded (``load_model()``).
    Its build's locals are kept beside it for ``observe_locals`` (Note [one model for the trace])."""
    path = Path(path)
    code = path / "model.py" if path.is_dir() else path
    module = import_by_path(code)
    import keras

    with cheap_initializers():  # load_model() overwrites every weight from the file
        model, tensors = build_with_locals(module, module.load_model)
    # only the tensors: a local holding the model itself would keep it alive through the table
    _LOCALS[model] = (code.resolve(), {k: v for k, v in tensors.items() if isinstance(v, keras.KerasTensor)})
    return model


def build_in_memory(graph):
    """``graph``'s Keras model with the weights its emit rules give, no weights file written or read (Note
    [segments in memory]). Example: ``run_jitted(build_in_memory(segment_graph), arrays)``."""
    emitter = KerasEmitter(graph)
    code = emitter.emit_graph()
    with tempfile.TemporaryDirectory(prefix="portx-segment-") as folder:
        path = Path(folder) / "model.py"
        path.write_text(code, encoding="utf-8")
        module = import_by_path(path)
    model = abstract_model(module)  # no initial values: each variable's first is its emitted array
    for layer, arrays in given_layers(model, emitter.weights):
        layer.set_weights(arrays)  # XLA copies a transposed view in tiles of its own
        release_all(arrays)  # JAX holds its copy now: the mapped checkpoint's pages need not stay resident
    return model


# Note [segments in memory]: streaming verification (verification/streaming.py) builds one model per distinct
# block of a large model. Emitted as OUT is and loaded back with ``load_weights``, a block's weights went through
# the sharded writer (model.py, .h5 shards on disk) and back through Keras' H5 store, which copies each array
# twice more before JAX copies it into the variable; the final glue of the 1B Llama (norm and a tied 525 MB
# head) took 40 s. Built here, model.py is still imported from a file (the code a user gets), the model is built
# without initial values (``abstract_model``: no zeros to allocate and replace) and each layer is handed its
# emitted arrays, which JAX copies once into the variables (a transposed view included: XLA transposes in tiles,
# faster than NumPy's element-by-element copy and without a C-ordered copy in between).


#: model -> (its model.py, build_model's locals): the KerasTensors of every intermediate; weak, freed with the model
_LOCALS = weakref.WeakKeyDictionary()

# Note [one model for the trace]: the trace reads every intermediate of the emitted model in one run of a probe
# model from the inputs to those KerasTensors. Built on the loaded model's own tensors, the probe shares its layers
# and weights; built by importing model.py again, it made a second model (resnet50: 0.3 s and 98 MB of weights,
# held beside the first while the probe ran). The locals are captured while ``load_model()`` builds, so a model
# that was not loaded here (or from another file) is built again as before.


def jitted(model):
    """``arrays -> [array]``: the model under one ``jax.jit`` (weights as arguments, not baked-in constants).

    One XLA compile of the whole graph is several times faster than eager op-by-op dispatch, it is
    how the model will run in production, and later batches of the same shapes reuse the compile. The
    function is made once per model, so verification at the example's size, the size checks and the
    trace share their compiles; the weights are read at each call (a later ``set_weights`` is seen).
    """
    run = _JITTED.get(model)
    if run is None:
        run = _JITTED[model] = _make_jitted(model)
    return run


#: model -> its jitted forward; weak, so a model portx is done with is freed with its compiles
_JITTED = weakref.WeakKeyDictionary()


def forget_compiles() -> None:
    """Drop every memoized forward and so its XLA executables (verification/memory.py, once a conversion
    runs them no more); a later ``jitted(model)`` compiles again. The user's own jitted functions are untouched."""
    _JITTED.clear()


def _make_jitted(model):
    import jax

    ref = weakref.ref(model)  # the table's value must not keep its key alive

    def forward(trainable, non_trainable, *inputs):
        args = list(inputs) if len(inputs) > 1 else (inputs or [None])[0]  # None: a ConstantModel (no inputs)
        out, _ = ref().stateless_call(trainable, non_trainable, args)
        return flatten_outputs(out)  # inside jit: JAX would hand a dict back with its keys sorted

    run = jax.jit(widened_dots(forward))  # Note [bfloat16 dots on the CPU]

    def weights():
        live = ref()
        return [v.value for v in live.trainable_variables], [v.value for v in live.non_trainable_variables]

    def call(arrays):
        return [np.asarray(o) for o in run(*weights(), *arrays)]

    def compile_for(specs):
        """Compile ahead for inputs of ``specs`` ([(shape, dtype)]): a later call at those shapes reuses it."""
        run.lower(*weights(), *[jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in specs]).compile()

    call.compile_for = compile_for  # verification/dynamic.py compiles the next size while the source runs
    return call


def run_jitted(model, arrays) -> list:
    """Run a Keras model once under ``jax.jit``; outputs as a list of arrays (see ``jitted``)."""
    return jitted(model)(arrays)


def build_with_locals(module, build=None):
    """Call ``build`` (default ``module.build_model``; ``module.load_model`` calls it too) and capture
    ``build_model``'s local variables (the intermediate KerasTensors): (model, locals).

    Used to observe every intermediate value of the emitted model when localizing a divergence.
    """
    captured = {}
    code = module.build_model.__code__

    def watch(frame, event, arg):
        if event == "return" and frame.f_code is code:
            captured.update(frame.f_locals)

    sys.setprofile(watch)
    try:
        model = (build or module.build_model)()
    finally:
        sys.setprofile(None)
    return model, captured


def observe_locals(code, arrays, names, like=None) -> dict:
    """{variable: array} for the ``names`` among ``build_model``'s locals in ``code`` (a model.py), on ``arrays``.

    The file is imported again and built with the weights beside it (those of ``like``, the model already loaded
    from that folder, when given); nothing else in OUT is run (Note [trust nothing in OUT] in
    verification/recheck.py).
    """
    import keras

    kept = _LOCALS.get(like) if like is not None else None
    if kept is not None and kept[0] == Path(code).resolve():  # Note [one model for the trace]
        model, tensors = like, kept[1]
    elif like is not None:  # Note [flat model without values]
        module = import_by_path(code)
        model, tensors = build_with_locals(module, lambda: abstract_model(module))
        if not _took_weights(model, like):
            model.load_weights(Path(code).parent / WEIGHTS_FILE)
    else:
        with cheap_initializers():  # the weights are loaded right after
            model, tensors = build_with_locals(import_by_path(code))
        if not _took_weights(model, like):
            model.load_weights(Path(code).parent / WEIGHTS_FILE)
    return _probe(model, {var: tensors.get(var) for var in names}, arrays, keras)


# Note [flat model without values]: the trace of a model whose code writes repeated blocks once reads their
# intermediates from the same graph emitted flat (Note [structured code] in targets/structure.py), a second model
# whose variables then take the loaded model's arrays (``_took_weights``: shared, not copied). Built with
# ``cheap_initializers`` its variables first held zeros, a full copy of the weights made only to be dropped
# (resnet50: +127 MB while it built, 98 of them zeros); built like ``abstract_model`` they hold nothing until
# they take the loaded model's arrays.


def _took_weights(model, like) -> bool:
    """Give ``model`` the weights of ``like`` (the same model.py, already loaded from its folder) when their
    variables pair up one to one: reading the weights file again costs seconds on a model of many layers."""
    mine, theirs = (model.weights, like.weights) if like is not None else ([], [None])
    if len(mine) != len(theirs) or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(mine, theirs)):
        return False
    for a, b in zip(mine, theirs):
        a.assign(b.value)
    return True


def observe_layers(model, arrays, names) -> dict:
    """{layer name: array} for the ``names`` that are single-output layers of a live functional ``model``."""
    import keras

    layers = {layer.name: layer for layer in model.layers}
    return _probe(model, {var: _layer_output(layers.get(var)) for var in names}, arrays, keras)


def _layer_output(layer):
    try:
        return layer.output  # raises for a layer called more than once (not written by portx)
    except (AttributeError, ValueError):
        return None


def _probe(model, tensors, arrays, keras) -> dict:
    """Run one model from ``model``'s inputs to every KerasTensor in ``tensors``: {name: array}."""
    pairs = [(var, t) for var, t in tensors.items() if isinstance(t, keras.KerasTensor)]
    if not pairs:
        return {}
    probe = keras.Model(model.inputs if len(model.inputs) > 1 else model.inputs[0], [t for _, t in pairs])
    return {var: np.asarray(a) for (var, _), a in zip(pairs, _run_unoptimized(probe, arrays))}


#: XLA options for a probe: every intermediate is an output, so there is little to fuse; these halve its compile
_PROBE_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def _run_unoptimized(model, arrays) -> list:
    """``model`` on ``arrays`` under one ``jax.jit`` compiled with ``_PROBE_OPTIONS`` (eager dispatch would
    compile op by op: 68 s against 12 s for a DenseNet-121's 426 intermediates)."""
    import jax

    def forward(trainable, non_trainable, *inputs):
        out, _ = model.stateless_call(trainable, non_trainable, list(inputs) if len(inputs) > 1 else inputs[0])
        return flatten_outputs(out)

    args = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables], *arrays)
    lowered = jax.jit(forward).lower(*args)
    try:
        compiled = lowered.compile(_PROBE_OPTIONS)
    except Exception:  # noqa: BLE001 - a backend without these options: its default compile
        compiled = lowered.compile()
    outputs = list(compiled(*args))
    del compiled, lowered, args  # Note [probe outputs]
    trim_heap()
    return [np.array(outputs.pop(0)) for _ in range(len(outputs))]


# Note [probe outputs]: the probe's executable (resnet50: ~50 MB, kept in the heap once compiled) is used once,
# and its outputs (every sampled intermediate: 30 MB) are copied to host arrays. Copied while the executable and
# all the device outputs still lived, the trace peaked 55 MB above the run; the executable is dropped and its heap
# pages trimmed first, and each output's device buffer is freed as soon as it is copied.
