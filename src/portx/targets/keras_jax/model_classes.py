"""Layer and model classes a written model.py defines beside ``build_model`` (registered serializable).

``FreeShape`` reshapes or broadcasts to a shape with free dims. ``ConstantModel`` is a model with no inputs:
a Keras functional model needs at least one KerasTensor input, so a source whose outputs depend on nothing
(``forward(self): return torch.linspace(0, 1, 5)``) is written as a ``keras.Model`` subclass holding its
outputs as weights; ``model()`` returns them, and ``model.save`` / ``keras.saving.load_model`` round-trip it.
``SizeCheck`` refuses an input size the model cannot take (Note [size checks] in targets/size_checks.py).
``DrawModel`` is a model with no inputs that draws random numbers (``forward(self): return torch.randn(3)``):
its outputs cannot be stored, so it wraps a functional model of one unread anchor input, and each ``model()``
draws afresh (Note [random ops] in frontends/torch/dynamic.py).

Example:
    >>> body = constant_model_body(emitter, "model")   # "    return ConstantModel(...)" for build_model
"""
from __future__ import annotations

from ...ops.random import RANDOM_OPS
from ..codegen import literal
from ..constants import evaluate_constant
from ..size_checks import size_checks

__all__ = ["CONSTANT_MODEL", "DRAW_MODEL", "FREE_SHAPE_LAYER", "SIZE_CHECK_LAYER", "constant_model_body",
           "draws_random", "write_size_checks"]

#: the FreeShape layer model.py defines when a reshape or broadcast keeps a free dim (KerasEmitter.free_shape)
FREE_SHAPE_LAYER = '''
@keras.saving.register_keras_serializable(package="converted")
class FreeShape(layers.Layer):
    """ops.reshape or ops.broadcast_to to a shape with free dims, or a slice whose bounds are free, read
    from model inputs at run time.

    Each entry of ``dims`` is a size, or [i, axis, scale, offset(, div)]: (scale * (size of the i-th input
    after x along axis) + offset) // div, div 1 when left out. For "slice", ``dims`` is [axis, start, end, step];
    for "pad", the (before, after) widths of each axis in turn, padding with ``value``. Registered serializable,
    like Constant.
    """

    def __init__(self, op, dims, value=0.0, **kwargs):
        super().__init__(**kwargs)
        if op not in ("reshape", "broadcast_to", "slice", "pad"):
            raise ValueError(f"FreeShape: unknown op {op!r}")
        self.op, self.dims, self.value = op, [d if isinstance(d, int) else list(d) for d in dims], value

    def call(self, x, *inputs):
        sizes = [d if isinstance(d, int) else (ops.shape(inputs[d[0]])[d[1]] * d[2] + d[3]) // (d[4:] or [1])[0]
                 for d in self.dims]
        if self.op == "slice":
            axis, start, end, step = sizes  # a take: jax.export keeps its size symbolic, not x[a:b]'s min(n, b)
            return ops.take(x, ops.arange(start, end, step, dtype="int32"), axis=axis)
        if self.op == "pad":
            return ops.pad(x, list(zip(sizes[0::2], sizes[1::2])), constant_values=self.value)
        return ops.reshape(x, sizes) if self.op == "reshape" else ops.broadcast_to(x, sizes)

    def compute_output_spec(self, x, *inputs):
        if self.op in ("reshape", "broadcast_to"):  # not traced: Keras gives every None dim one symbol, which a
            # divided size (h // 2 of the input's h) never equals (the converter's Note [divided dims])
            return keras.KerasTensor(tuple(d if isinstance(d, int) else None for d in self.dims), x.dtype)
        # traced on a dense stand-in: Keras marks ops.multiply(x, constant) sparse, and would trace a sparse array
        return super().compute_output_spec(keras.KerasTensor(x.shape, x.dtype), *inputs)

    def get_config(self):
        return {**super().get_config(), "op": self.op, "dims": self.dims, "value": self.value}
'''

CONSTANT_MODEL = '''
@keras.saving.register_keras_serializable(package="converted")
class ConstantModel(keras.Model):
    """A model with no inputs: ``model()`` returns its stored arrays (weights ``value_0``, ``value_1``, ...).

    Registered serializable: after this file is imported, keras.saving.load_model reads a saved model.
    """

    def __init__(self, shapes, dtypes, **kwargs):
        super().__init__(**kwargs)
        self.shapes, self.dtypes = [tuple(s) for s in shapes], list(dtypes)
        self.values = [self.add_weight(shape=s, dtype=d, initializer="zeros", name=f"value_{i}", trainable=False)
                       for i, (s, d) in enumerate(zip(self.shapes, self.dtypes))]
        self.built = True

    def call(self, inputs=None):
        outputs = [ops.convert_to_tensor(v) for v in self.values]
        return outputs[0] if len(outputs) == 1 else outputs

    def get_build_config(self):
        return None  # built in __init__: nothing to rebuild from an input shape

    def get_config(self):
        return {"name": self.name, "shapes": self.shapes, "dtypes": self.dtypes}
'''


def constant_model_body(emitter, name: str) -> str:
    """``build_model``'s body for a graph with no inputs; the arrays are recorded as ``emitter.weights[name]``."""
    graph = emitter.graph
    arrays = [graph.params[v.name] if graph.is_param(v) else evaluate_constant(graph, v) for v in graph.outputs]
    emitter.define("ConstantModel", CONSTANT_MODEL)
    emitter.weights[name] = arrays
    shapes = literal([tuple(a.shape) for a in arrays])
    dtypes = literal([str(a.dtype) for a in arrays])
    return f"    return ConstantModel({shapes}, {dtypes}, name={literal(name)})\n"

DRAW_MODEL = '''
@keras.saving.register_keras_serializable(package="converted")
class DrawModel(keras.Model):
    """A model with no inputs that draws random numbers: ``model()`` runs ``inner``, a functional model whose one
    input (``anchor``, shape (1,)) is never read, so every call draws afresh. Registered serializable."""

    def __init__(self, inner, **kwargs):
        super().__init__(**kwargs)
        self.inner = inner if isinstance(inner, keras.Model) else keras.saving.deserialize_keras_object(inner)
        self.built = True

    def call(self, inputs=None):
        return self.inner(ops.zeros((1,)))

    def get_layer(self, name=None, index=None):
        return self.inner.get_layer(name, index)

    def get_build_config(self):
        return None  # built in __init__: nothing to rebuild from an input shape

    def get_config(self):
        return {"name": self.name, "inner": keras.saving.serialize_keras_object(self.inner)}
'''


def draws_random(graph) -> bool:
    """True when ``graph`` holds a random op (``ops.random.RANDOM_OPS``): it is drawn at run time, never stored."""

    return any(node.op in RANDOM_OPS for node in graph.nodes)

#: the SizeCheck layer model.py defines when a free dim takes multiples of a step only (Note [size checks])
SIZE_CHECK_LAYER = '''
@keras.saving.register_keras_serializable(package="converted")
class SizeCheck(layers.Layer):
    """Passes ``x`` through, refusing a size along ``axis`` that is not ``offset`` plus a multiple of ``step``: the
    model divides that size by ``step`` (it pools, then upsamples back) and could not run there. A size not known
    yet (None while the model is built, a symbolic one under jax.export) is not checked. Registered serializable.
    """

    def __init__(self, input_name, axis, step, offset=0, **kwargs):
        super().__init__(**kwargs)
        self.input_name, self.axis, self.step, self.offset = input_name, axis, step, offset

    def call(self, x):
        size = x.shape[self.axis]
        if isinstance(size, int) and (size - self.offset) % self.step:
            rule = f"{self.offset} plus a multiple of {self.step}" if self.offset else f"a multiple of {self.step}"
            raise ValueError(f"input {self.input_name}: axis {self.axis} has size {size}, not {rule} (the model "
                             f"divides it by {self.step})")
        return x

    def get_config(self):
        return {**super().get_config(), "input_name": self.input_name, "axis": self.axis, "step": self.step,
                "offset": self.offset}
'''


def write_size_checks(emitter, head) -> dict:
    """``x_checked = SizeCheck("x", 2, 2, name=...)(x)`` into ``head`` for each input axis ``size_checks`` lists,
    the later nodes reading the checked input (Note [size checks]); returns {input Value: its Input variable}."""
    given = {}
    for value, axis, step, offset in size_checks(emitter.graph):
        var = given.setdefault(value, emitter.names[value])
        checked = emitter.ns.name(f"{var}_checked", "input")
        name = emitter.layer_ident(f"{var}_size_check_{axis}", "size_check")
        emitter.define("SizeCheck", SIZE_CHECK_LAYER)
        head.line(f"{checked} = SizeCheck({literal(var)}, {axis}, {step}, {offset}, name={literal(name)})"
                  f"({emitter.names[value]})")
        emitter.names[value] = checked
    return given
