"""keras-jax emit rules for the random ops: ``RandomSample``, a small registered layer written into model.py.

The layer owns a ``keras.random.SeedGenerator`` seeded with the node's seed: its state is a (non-trainable)
variable, so every call draws fresh numbers, the functional model stays a graph of layers, and
``model.save`` / ``keras.saving.load_model`` and ``save_weights`` / ``load_weights`` keep it. Normal, uniform
and integer draws are ``keras.random.normal/uniform/randint``; the other distributions transform a uniform draw
``u`` in [0, 1) (cauchy ``median + sigma * tan(pi * (u - 1/2))``, exponential ``-log1p(-u) / lambd``, geometric
``max(ceil(log1p(-u) / log1p(-p)), 1)``) and log-normal exponentiates a normal one. Multinomial draws are
``keras.random.categorical`` of the log-probabilities with replacement, else the top ``num_samples`` of the
log-probabilities plus Gumbel noise (sampling without replacement); a permutation is ``keras.random.shuffle``
of an arange. A node without an input (``torch.randn(3, 4)``) gives the layer its ``shape`` and calls it on the
model's first input, which it does not read: the call keeps the draw in the graph, so it is fresh on every call
(a free dim of the shape is read from an input at run time, as ``FreeShape`` does); in a model with no inputs,
on the anchor input of its ``DrawModel`` (targets/keras_jax/model_classes.py). All of it lowers on TPU.

Example generated code:
    noise = RandomSample('normal', [0.0, 1.0], 'float32', seed=1234, name='noise')(x)
    rand = RandomSample('uniform', [0.0, 1.0], 'float32', seed=77, shape=[2, 3], name='rand')(x)
"""
from __future__ import annotations

from ...ir import FreeDimRefused, SymDim
from ..random import MULTINOMIAL, RANDOM

__all__ = ["RANDOM_SAMPLE_LAYER"]

RANDOM_SAMPLE_LAYER = '''
@keras.saving.register_keras_serializable(package="converted")
class RandomSample(layers.Layer):
    """Fresh random numbers of its input's shape from ``distribution`` with ``params`` (the input's values are
    not read), or ``multinomial`` category ids per row of its input's probabilities (params: num_samples,
    replacement). With a ``shape`` the input only anchors the draw in the graph: each entry is a size or
    [i, axis, scale, offset], scale * (size of input i along axis) + offset (input 0 is x, then ``inputs``).
    Its SeedGenerator's state is a variable, saved and reloaded with the weights."""

    def __init__(self, distribution, params=(), out_dtype="float32", seed=0, shape=None, **options):
        options.pop("autocast", None)
        super().__init__(autocast=False, **options)
        self.distribution, self.params, self.out_dtype, self.seed = distribution, list(params), out_dtype, seed
        self.shape = None if shape is None else [d if isinstance(d, int) else list(d) for d in shape]
        self.generator = keras.random.SeedGenerator(seed)

    def call(self, x, *inputs):
        kind, p, seed = self.distribution, self.params, self.generator
        if kind == "multinomial":
            return ops.cast(self._multinomial(x, int(p[0]), bool(p[1])), self.out_dtype)
        sources = (x,) + inputs
        shape = ops.shape(x) if self.shape is None else tuple(
            d if isinstance(d, int) else ops.shape(sources[d[0]])[d[1]] * d[2] + d[3] for d in self.shape)
        if kind == "permutation":
            return ops.cast(keras.random.shuffle(ops.arange(shape[0], dtype="int32"), seed=seed), self.out_dtype)
        if kind == "normal":
            y = keras.random.normal(shape, p[0], p[1], dtype="float32", seed=seed)
        elif kind == "uniform":
            y = keras.random.uniform(shape, p[0], p[1], dtype="float32", seed=seed)
        elif kind == "randint":
            y = keras.random.randint(shape, int(p[0]), int(p[1]), dtype="int32", seed=seed)
        elif kind == "log_normal":
            y = ops.exp(keras.random.normal(shape, p[0], p[1], dtype="float32", seed=seed))
        else:
            u = keras.random.uniform(shape, dtype="float32", seed=seed)
            if kind == "cauchy":
                y = p[0] + p[1] * ops.tan(3.141592653589793 * (u - 0.5))
            elif kind == "exponential":
                y = -ops.log1p(-u) / p[0]
            elif kind == "geometric":
                y = ops.maximum(ops.ceil(ops.log1p(-u) / ops.log1p(-p[0])), 1.0)
            else:
                raise ValueError(f"RandomSample: unknown distribution {kind!r}")
        return ops.cast(y, self.out_dtype)

    def _multinomial(self, probs, count, replacement):
        logits = ops.log(ops.cast(probs, "float32"))
        if not replacement:  # Gumbel top-k: the k largest perturbed log-probabilities, without repeats
            u = keras.random.uniform(ops.shape(logits), minval=1e-20, maxval=1.0, seed=self.generator)
            return ops.top_k(logits - ops.log(-ops.log(u)), count)[1]
        rows = ops.reshape(logits, (-1, ops.shape(logits)[-1]))
        picks = keras.random.categorical(rows, count, seed=self.generator)
        return ops.reshape(picks, tuple(ops.shape(logits)[:-1]) + (count,))

    def compute_output_spec(self, x, *inputs):
        shape = tuple(x.shape[:-1]) + (int(self.params[0]),) if self.distribution == "multinomial" else x.shape
        if self.shape is not None:
            shape = tuple(d if isinstance(d, int) else None for d in self.shape)
        return keras.KerasTensor(shape, self.out_dtype)

    def get_config(self):
        return {**super().get_config(), "distribution": self.distribution, "params": self.params,
                "out_dtype": self.out_dtype, "seed": self.seed, "shape": self.shape}
'''


def _shape_spec(node, k):
    """(``shape=...`` argument, the input variables it reads) for a node without an input (Note [random ops])."""
    refs, dims = [k.ref(k.graph.inputs[0]) if k.graph.inputs else "anchor"], []  # anchor: DrawModel's input
    for d in node.attrs["shape"]:
        if isinstance(d, SymDim) and "*" in d.symbol:
            raise FreeDimRefused(f"random draws read one input size per dim, not the product {d}",
                                 set(d.symbol.split("*")))
        if isinstance(d, SymDim) and d.div != 1:
            raise FreeDimRefused(f"random draws read sizes without a division, not {d}", d.symbols)
        if isinstance(d, SymDim):
            value, axis = k.site(d.symbol)
            refs += [] if k.ref(value) in refs else [k.ref(value)]
            dims.append([refs.index(k.ref(value)), axis, d.scale, d.offset])
        else:
            dims.append(int(d))
    return f", shape={k.lit(dims)}", refs


def _sample_layer(node, k, distribution, params):
    name = k.layer_name(node)
    k.define("RandomSample", RANDOM_SAMPLE_LAYER)
    dtype = node.outputs[0].type.dtype
    shape, refs = ("", [k.ref(node.inputs[0])]) if node.inputs and node.inputs[0] is not None else _shape_spec(node, k)
    k.assign(node, f"RandomSample({k.lit(distribution)}, {k.lit(list(params))}, {k.lit(dtype)}, "
                   f"seed={k.lit(int(node.attrs['seed']))}{shape}, name={k.lit(name)})({', '.join(refs)})")


@RANDOM.emits("keras-jax")
def _random_to_keras(node, k):
    _sample_layer(node, k, node.attrs["distribution"], node.attrs["params"])


@MULTINOMIAL.emits("keras-jax")
def _multinomial_to_keras(node, k):
    _sample_layer(node, k, "multinomial", [int(node.attrs["num_samples"]), bool(node.attrs["replacement"])])
