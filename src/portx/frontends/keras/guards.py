"""Guards around Keras rebuilding a stored model: stack room, one Sequential rebuild, a weight budget.

Note [keras load guards]: three things go wrong when Keras rebuilds a big or hostile model from its config.
portx guards each while ``keras.saving.load_model`` runs and undoes the guards afterwards (one guarded load
at a time, under a lock, because the recursion limit and the patched Keras methods are process-wide):

- Recursion. Keras maps a functional graph recursively (``_build_map_helper`` in ``keras/src/ops/function.py``),
  one frame per layer of depth, so a 2,000-layer chain exceeds Python's default limit of 1,000. The limit is
  raised to fit the stored layer count. This is safe only because Note [keras archive checks] already bounded
  the JSON nesting: the rest of Keras' recursion follows that nesting.
- Time. ``Sequential.from_config`` adds layers one at a time and every ``add`` rebuilds the whole functional
  graph, calling each layer again: quadratic (70 s for 400 layers, 11 minutes for 2,000) and every layer keeps
  one stale inbound node per rebuild. While guarded, ``from_config`` adds all layers with ``rebuild=False`` and
  rebuilds once, which leaves the model as the last ``add`` would have.
- Memory. A config decides the variable shapes, and Keras allocates and initializes the variables before it
  reads any weights, so ``Dense(units=2**62)`` aborts the process inside XLA (an int64 overflow) and
  ``units=10**9`` takes gigabytes. Every variable is checked before it is allocated against the weight bytes
  the file holds: an honest file stores each variable, so more than twice that plus ``_SLACK`` is refused.

Example:
    >>> with load_guards(weight_bytes=11_652, layers=3, where="m.keras"):
    ...     model = keras.saving.load_model("m.keras", compile=False)
"""
from __future__ import annotations

import contextlib
import math
import sys
import threading

from ...errors import BadInput

__all__ = ["load_guards", "WeightBudgetExceeded"]

#: variable bytes allowed beyond twice the stored weights (seed states, counters, rounding)
_SLACK = 64 << 20
#: Python frames allowed per stored layer while Keras maps the graph, on top of the default
_FRAMES_PER_LAYER = 6
#: never raise the limit beyond this: deeper Python recursion risks the C stack
_MAX_RECURSION = 200_000
_LOCK = threading.RLock()


class WeightBudgetExceeded(BadInput):
    """A variable of the model being rebuilt would need more memory than the file's weights justify."""


class _Budget:
    def __init__(self, weight_bytes, where):
        self.limit, self.stored, self.where = 2 * weight_bytes + _SLACK, weight_bytes, where
        self.sizes, self.total, self.error = {}, 0, None

    def check(self, variable, shape):
        """Count ``variable`` once (Keras validates a shape again after allocating); raise WeightBudgetExceeded
        when the model outgrows the file."""
        if any(not isinstance(d, int) or d < 0 for d in shape):
            return  # Keras refuses these itself
        size = math.prod(shape) * _itemsize(getattr(variable, "_dtype", "float32"))
        self.total += size - self.sizes.get(id(variable), 0)
        self.sizes[id(variable)] = size
        if self.total > self.limit:
            self.error = WeightBudgetExceeded(
                f"{self.where}: weight {getattr(variable, 'path', '?')} has shape {tuple(shape)} ({size:.3g} bytes), "
                f"and the model's weights would take {self.total:.3g} bytes while the file stores {self.stored}",
                hint="the config declares shapes its weights file cannot fill; do not use this file")
            raise self.error


def _itemsize(dtype) -> int:
    import numpy as np

    try:
        return np.dtype(str(dtype)).itemsize
    except TypeError:
        import jax.numpy as jnp

        try:
            return jnp.dtype(str(dtype)).itemsize
        except TypeError:
            return 8


def _sequential_from_config(cls, config, custom_objects=None):
    """``Sequential.from_config`` with one rebuild at the end (Note [keras load guards])."""
    from keras.src.legacy.saving import saving_utils
    from keras.src.saving import serialization_lib

    if not isinstance(config, dict) or "name" not in config or not isinstance(config.get("layers"), list):
        raise ValueError("a Sequential config must be an object with 'name' and a list of 'layers'")
    model = cls(name=config["name"])
    for layer_config in config["layers"]:
        rebuild = (serialization_lib.deserialize_keras_object if isinstance(layer_config, dict)
                   and "module" in layer_config else saving_utils.model_from_config)
        model.add(rebuild(layer_config, custom_objects=custom_objects), rebuild=False)
    if model._layers:
        model._maybe_rebuild()
    shape = config.get("build_input_shape")
    if not model._functional and shape and isinstance(shape, (tuple, list)):
        model.build(shape)
    return model


@contextlib.contextmanager
def load_guards(weight_bytes: int, layers: int, where: str):
    """Raise the recursion limit, batch Sequential rebuilds and budget variables while Keras loads.

    Raises WeightBudgetExceeded when a variable outgrows the file (also when Keras swallowed the first raise).
    """
    from keras.src.backend.common.variables import Variable
    from keras.src.models.sequential import Sequential

    budget = _Budget(weight_bytes, where)
    validate, from_config = Variable._validate_shape, Sequential.__dict__["from_config"]

    def checked_shape(variable, shape):
        shape = validate(variable, shape)
        budget.check(variable, shape)
        return shape

    with _LOCK:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(min(max(limit, 1000 + _FRAMES_PER_LAYER * layers), _MAX_RECURSION))
        Sequential.from_config = classmethod(_sequential_from_config)
        Variable._validate_shape = checked_shape
        try:
            yield budget
        except Exception:
            if budget.error is not None:  # Keras may have wrapped or swallowed the first raise
                raise budget.error from None
            raise
        finally:
            Variable._validate_shape = validate
            Sequential.from_config = from_config
            sys.setrecursionlimit(limit)
    if budget.error is not None:
        raise budget.error
