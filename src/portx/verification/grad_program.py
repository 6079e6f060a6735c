"""The converted Keras model's gradient program: traced once, compiled once, optionally in the background.

``compare_gradients`` (grads.py) differentiates the converted model with ``jax.grad`` of a weighted sum of
its outputs. This module builds that program and compiles it (Note [gradient compile]); ``start_program``
traces it now and compiles it on a background thread, so the compile (most of the gradient check's time on
a CNN) runs while the other checks do; ``Started.get`` waits for it.

Example:
    >>> started = start_program(model, arrays, weights)   # returns at once after tracing
    >>> run, args, floats, trainable = started.get()      # waits for the compile
    >>> g_params, g_inputs = run(*args)
"""
from __future__ import annotations

import re
import threading

import numpy as np

from ..frontends.keras.files import packed_inputs
from ..frontends.keras.subclassed import call_args, needs_tracing

__all__ = ["GRAD_COMPILE_OPTIONS", "keras_program", "abstract_program", "compiled", "start_program", "Started"]

#: XLA options for the gradient program (Note [gradient compile]): LLVM's backend optimizations off
GRAD_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0}

# Note [gradient compile]: the gradient program runs once, so its compile is nearly all of its cost (16.5 s
# of 16.6 s for a MobileNetV2 on a loaded 2-core machine). With LLVM's backend optimizations off it compiles
# in 10 s; the HLO and XLA's own passes (fusion, algebraic simplification) are the same, so the arithmetic is
# the same up to rounding (2.4e-7 largest difference on that model's gradients, against GRAD_ATOL = 1e-4).
# The converted model's forward (verification, the size checks) keeps XLA's default options.
# Unoptimized code is not always slower by a constant: XLA:CPU runs some input-dilated convolutions (the input
# gradient of a strided convolution) as a plain loop nest, which only LLVM's optimizations make fast. The
# input gradient of a ViT's 16x16 stride-16 patch embedding on a 224x224 image took 134 s unoptimized and 0.06 s
# with the defaults, so a 2-layer BEiT or DINOv2 at 224 spent 219-250 s in the gradient check (loaded 2-core
# machine; 1.9 s with the defaults). Measured on input gradients (unoptimized / default): windows 2, 3, 4 and 7
# at strides 2-4, 8 at stride 8 and 14 at stride 14 ran within 3x either way; 12 at stride 12 took 0.66 s /
# 0.0006 s and 16 at stride 16 15-134 s / 0.08 s. So a program with an input-dilated convolution whose window is
# ``SLOW_DILATED_WINDOW`` (8) or wider on a dilated axis compiles with the defaults (``slow_unoptimized``): a
# few seconds more compile where the rule is cautious, never minutes of run time.
# convert compiles it from before the verify stage and waits for it before the trace (``grads.settled``): the
# trace's probe compile and its buffers stacked on it (DenseNet-121: 1.6 GB peak -> about 1.1 GB; on two
# cores they were not faster together than one after the other).

# Note [abstract gradients]: above the weight budget (Note [weight budget] in budget.py) the emitted model has no
# weight values, so its gradients cannot be compared with the source's. The same program is still lowered, with
# every variable a jax.ShapeDtypeStruct, for the CPU and for TPU (jax.export, like the TPU proof): the report
# says that the backward pass of every op lowers, at no weight memory (a lowering allocates no buffers). The
# numbers are compared only where the weights fit.


def _loss(model, arrays):
    """(``loss(trainable values, floating inputs, non-trainable values, output weights)``, indices of the
    floating inputs): ``sum_k sum(out_k * weights_k)`` of the model in inference mode."""
    import jax.numpy as jnp
    import keras

    floats = [i for i, a in enumerate(arrays) if np.issubdtype(np.asarray(a).dtype, np.floating)]

    def loss(values, float_inputs, frozen, weights):
        inputs = list(arrays)
        for i, x in zip(floats, float_inputs):
            inputs[i] = x
        args = call_args(model, inputs) if needs_tracing(model) else (packed_inputs(model, inputs),)
        out, _ = model.stateless_call(values, frozen, *args, training=False)
        return sum(jnp.sum(o.astype(jnp.float32) * w)
                   for o, w in zip(keras.tree.flatten(out), weights) if w is not None)

    return loss, floats


def keras_program(model, arrays, weights):
    """(lowered program, its arguments, indices of the floating inputs, trainable variables) of
    ``grad(sum_k sum(out_k * weights_k))`` with respect to the trainable weights and floating inputs."""
    import jax
    import jax.numpy as jnp

    trainable, frozen = model.trainable_variables, [v.value for v in model.non_trainable_variables]
    loss, floats = _loss(model, arrays)
    # one compile of forward and backward: eager jax.grad dispatches (and compiles) op by op, minutes on a CNN
    args = ([v.value for v in trainable], [jnp.asarray(arrays[i]) for i in floats], frozen, list(weights))
    return jax.jit(jax.grad(loss, argnums=(0, 1))).lower(*args), args, floats, trainable


def abstract_program(model, arrays, weights, platforms=("cpu", "tpu")) -> dict:
    """Lower the gradient program of ``keras_program`` on abstract weights (every variable a
    ``jax.ShapeDtypeStruct``, Note [abstract gradients]) for each of ``platforms``; nothing runs.

    Example: ``abstract_program(model, arrays, weights)["platforms"] == {"cpu": "lowered", "tpu": "lowered"}``."""
    import jax

    loss, floats = _loss(model, arrays)

    def spec(x):
        return jax.ShapeDtypeStruct(tuple(x.shape), jax.numpy.dtype(x.dtype))

    args = ([spec(v) for v in model.trainable_variables], [spec(np.asarray(arrays[i])) for i in floats],
            [spec(v) for v in model.non_trainable_variables], list(weights))
    program, done = jax.jit(jax.grad(loss, argnums=(0, 1))), {}
    for platform in platforms:
        try:
            jax.export.export(program, platforms=[platform])(*args)
            done[platform] = "lowered"
        except Exception as exc:  # noqa: BLE001 - a lowering failure is the finding, reported
            done[platform] = f"failed: {type(exc).__name__}: {str(exc)[:200]}"
    return {"platforms": done, "parameters": len(args[0]), "float_inputs": len(floats)}


def compiled(lowered):
    """``lowered`` compiled with ``GRAD_COMPILE_OPTIONS``, or by default where a backend refuses them or the
    program holds a convolution XLA runs slowly unoptimized (Note [gradient compile])."""
    if slow_unoptimized(lowered.as_text()):
        return lowered.compile()
    try:
        return lowered.compile(GRAD_COMPILE_OPTIONS)
    except Exception:  # noqa: BLE001 - a backend without these options: its default compile
        return lowered.compile()


#: an input-dilated convolution with a window this wide or wider on a dilated axis: compiled with XLA's defaults
SLOW_DILATED_WINDOW = 8

_CONV = re.compile(r"stablehlo\.convolution.*x\[([^\]]*)\]->.*lhs_dilate = \[([\d, ]*)\].*"
                   r"\(tensor<[^>]*>, tensor<([\dx]+)x\w+>\)")


def slow_unoptimized(text) -> bool:
    """True when the StableHLO ``text`` holds a convolution whose input is dilated (the input gradient of a
    strided convolution, a transposed convolution) with a wide window on a dilated axis (Note [gradient
    compile]). Example: the gradient of a ViT's 16x16 stride-16 patch embedding."""
    for match in _CONV.finditer(text):
        spec = [d.strip() for d in match.group(1).split(",")]
        dilate = [int(d) for d in match.group(2).split(",") if d.strip()]
        dims = [int(d) for d in match.group(3).split("x")]
        window = [dims[spec.index(str(axis))] for axis in range(len(dilate))]
        if any(d > 1 and w >= SLOW_DILATED_WINDOW for d, w in zip(dilate, window)):
            return True
    return False


class Started:
    """A gradient program being compiled on a background thread (XLA releases the GIL while it compiles)."""

    def __init__(self, model, arrays, weights):
        self.model, self.arrays, self.weights = model, arrays, weights
        self._done, self._error, self._result = threading.Event(), None, None
        try:
            lowered, *self._rest = keras_program(model, arrays, weights)
        except Exception as exc:  # noqa: BLE001 - re-raised by get(), where the check reports it
            self._error = exc
            self._done.set()
            return
        threading.Thread(target=self._compile, args=(lowered,), name="portx-grad-compile", daemon=True).start()

    def _compile(self, lowered):
        try:
            self._result = compiled(lowered)
        except Exception as exc:  # noqa: BLE001 - re-raised by get()
            self._error = exc
        finally:
            self._done.set()

    def settled(self):
        """Wait until the compile has finished or failed (``get`` reports which)."""
        self._done.wait()

    def get(self):
        """(compiled program, its arguments, floating input indices, trainable variables); waits for the compile."""
        self.settled()
        if self._error is not None:
            raise self._error
        return (self._result, *self._rest)


def start_program(model, arrays, weights) -> Started:
    """Trace the gradient program now and compile it in the background (see ``Started``)."""
    return Started(model, arrays, weights)
