"""The ``keras.ops`` conformance cases: per public function, what ``call`` computes and its inputs' domains.

``SPECS[name] = (fn, domains)``: ``fn`` takes one tensor per domain (``call(self, x)`` or ``call(self, x, y)``);
each domain names a seeded input in the op's domain (``DOMAINS``). ``REFUSED[name]`` says why a function has no
case (random or Python-valued results, data-dependent shapes). Used by keras_ops_cases.py.

Example:
    >>> fn, domains = SPECS["add"]
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402

O = keras.ops
__all__ = ["SPECS", "REFUSED", "DOMAINS", "domain_input"]

REFUSED = {
    "convert_to_numpy": "returns a NumPy array (a Python value), not a traced tensor",
    "dtype": "returns the dtype's name (a Python string)",
    "is_tensor": "returns a Python bool",
    "ndim": "returns a Python int",
    "shape": "returns a Python tuple of dims",
    "size": "returns a Python int under tracing",
    "custom_gradient": "a decorator for gradients, no forward computation of its own",
    "empty": "uninitialised values: nothing to compare",
    "empty_like": "uninitialised values: nothing to compare",
    "nonzero": "data-dependent output shape (refused with exit 4; use where(mask, x, 0))",
    "unique": "data-dependent output shape (refused with exit 4; use a fixed size=)",
    "bincount": "data-dependent output shape: Keras's JAX bincount calls jnp.bincount without a static length, so "
                "it cannot be traced even with minlength= (Keras says so); use ops.sum(ops.one_hot(x, n), axis=-2)",
    "eig": "non-symmetric eigendecomposition: complex outputs and no XLA TPU lowering (use eigh)",
    "ctc_decode": "greedy/beam decoding with data-dependent lengths (its sparse result has no static shape)",
    "convert_to_tensor": "a constant factory: covered by every case (its inputs), no op of its own",
}


def _rng(seed):
    return np.random.default_rng(seed)


def _spd(r):
    a = r.standard_normal((2, 3, 3))
    return a @ a.transpose(0, 2, 1) + 3 * np.eye(3)


#: domain -> seeded array builder (seed per position)
DOMAINS = {
    "f": lambda r: r.standard_normal((2, 4)),
    "p": lambda r: r.uniform(0.5, 2.0, (2, 4)),
    "u": lambda r: r.uniform(-0.9, 0.9, (2, 4)),
    "g1": lambda r: r.uniform(1.1, 3.0, (2, 4)),
    "i": lambda r: r.integers(0, 8, (2, 4)).astype("int32"),
    "ip": lambda r: r.integers(1, 8, (2, 4)).astype("int32"),
    "sq": lambda r: r.standard_normal((2, 3, 3)) + 2 * np.eye(3),
    "spd": _spd,
    "img": lambda r: r.standard_normal((2, 8, 8, 3)),
    "seq": lambda r: r.standard_normal((2, 6, 4)),
    "v3": lambda r: r.standard_normal((2, 3)),
    "sig": lambda r: r.standard_normal((2, 64)),
    "prob": lambda r: r.dirichlet(np.ones(4), 2),
}


def domain_input(domain, seed):
    """The seeded input for ``domain`` (float32 unless the domain is integral)."""
    value = DOMAINS[domain](_rng(seed))
    return value if value.dtype.kind == "i" else value.astype("float32")


def _u(fn, dom="f"):
    return fn, (dom,)


def _b(fn, d1="f", d2="f"):
    return fn, (d1, d2)


_UNARY = {n: "f" for n in ("abs absolute arcsinh arctan cbrt ceil conj conjugate copy cos cosh deg2rad erf exp exp2 "
                           "erfc expm1 fabs floor i0 isfinite isinf isnan isneginf isposinf isreal negative rad2deg round "
                           "sign signbit sin sinc sinh square tan tanh trunc nan_to_num ravel real imag angle "
                           "celu elu gelu glu hard_shrink hard_sigmoid hard_silu hard_swish hard_tanh leaky_relu "
                           "log_sigmoid log_softmax relu relu6 selu sigmoid silu soft_shrink softmax softplus softsign "
                           "sparse_plus sparse_sigmoid sparsemax squareplus swish tanh_shrink normalize "
                           "rms_normalization layer_normalization stop_gradient transpose flip fliplr sort argsort "
                           "cumsum cumprod nancumsum nancumprod logsumexp amax amin max min sum prod mean std var "
                           "ptp all any count_nonzero argmax argmin nanargmax nanargmin nanmax nanmin nanmean "
                           "nanmedian nansum nanprod nanstd nanvar median average norm diff").split()}
_UNARY.update(arccos="u", arcsin="u", arctanh="u", erfinv="u", arccosh="g1", log="p", log10="p", log1p="p",
              log2="p", reciprocal="p", rsqrt="p", sqrt="p", bitwise_invert="i", bitwise_not="i")
_BINARY = {n: ("f", "f") for n in ("add arctan2 divide_no_nan equal fmax fmin greater greater_equal heaviside "
                                   "hypot less less_equal logaddexp logaddexp2 maximum minimum multiply nextafter "
                                   "not_equal subtract isclose allclose").split()}
_BINARY.update(divide=("f", "p"), true_divide=("f", "p"), floor_divide=("f", "p"), fmod=("f", "p"), mod=("f", "p"),
               power=("p", "f"), bitwise_and=("i", "i"), bitwise_or=("i", "i"), bitwise_xor=("i", "i"),
               bitwise_left_shift=("i", "i"), bitwise_right_shift=("i", "i"), left_shift=("i", "i"),
               right_shift=("i", "i"), gcd=("ip", "ip"), lcm=("ip", "ip"))


def _boolean(fn):
    return _b(lambda x, y: fn(O.greater(x, 0), O.greater(y, 0)))


def _t(x):
    return O.transpose(x, (0, 2, 1))


_SPECIAL = {
    "logical_and": _boolean(O.logical_and), "logical_or": _boolean(O.logical_or),
    "logical_xor": _boolean(O.logical_xor), "logical_not": _u(lambda x: O.logical_not(O.greater(x, 0))),
    "ldexp": _b(lambda x, y: O.ldexp(x, y), "f", "i"),
    "matmul": _b(lambda x, y: O.matmul(x, _t(y)), "seq", "seq"), "dot": _b(lambda x, y: O.dot(x, O.transpose(y))),
    "inner": _b(O.inner), "outer": _b(O.outer), "vdot": _b(O.vdot), "cross": _b(O.cross, "v3", "v3"),
    "kron": _b(O.kron), "tensordot": _b(lambda x, y: O.tensordot(x, y, axes=([1], [1]))),
    "einsum": _b(lambda x, y: O.einsum("bij,bkj->bik", x, y), "seq", "seq"),
    "append": _b(lambda x, y: O.append(x, y, axis=1)), "concatenate": _b(lambda x, y: O.concatenate([x, y], 1)),
    "stack": _b(lambda x, y: O.stack([x, y], axis=1)), "hstack": _b(lambda x, y: O.hstack([x, y])),
    "vstack": _b(lambda x, y: O.vstack([x, y])), "dstack": _b(lambda x, y: O.dstack([x, y])),
    "where": _b(lambda x, y: O.where(O.greater(x, 0), x, y)),
    "select": _b(lambda x, y: O.select([O.greater(x, 0.5), O.less(x, -0.5)], [x, y], 0.0)),
    "clip": _u(lambda x: O.clip(x, -0.5, 0.5)), "threshold": _u(lambda x: O.threshold(x, 0.1, 0.0)),
    "correlate": _u(lambda x: O.correlate(x[0], x[1], mode="same")),
    "trapezoid": _u(lambda x: O.trapezoid(x, axis=-1)), "cast": _u(lambda x: O.cast(x, "int32")),
    "saturate_cast": _u(lambda x: O.saturate_cast(x * 200, "int8")),
    "view": _u(lambda x: O.view(x, "int32")), "identity": _u(lambda x: x @ O.identity(4)),
    "eye": _u(lambda x: x @ O.eye(4, 4, k=1)), "tri": _u(lambda x: x @ O.tri(4)),
    "arange": _u(lambda x: x + O.arange(4, dtype="float32")), "ones": _u(lambda x: x + O.ones((4,))),
    "zeros": _u(lambda x: x + O.zeros((4,))), "full": _u(lambda x: x * O.full((4,), 2.0)),
    "ones_like": _u(lambda x: x + O.ones_like(x)), "zeros_like": _u(lambda x: x + O.zeros_like(x)),
    "full_like": _u(lambda x: x * O.full_like(x, 3.0)), "linspace": _u(lambda x: x * O.linspace(0.0, 1.0, 4)),
    "logspace": _u(lambda x: x * O.logspace(0.0, 1.0, 4)), "geomspace": _u(lambda x: x * O.geomspace(1.0, 8.0, 4)),
    "bartlett": _u(lambda x: x * O.bartlett(4)), "blackman": _u(lambda x: x * O.blackman(4)),
    "hamming": _u(lambda x: x * O.hamming(4)), "hanning": _u(lambda x: x * O.hanning(4)),
    "kaiser": _u(lambda x: x * O.kaiser(4, 5.0)), "array": _u(lambda x: x + O.array([1.0, 2.0, 3.0, 4.0])),
    "vander": _u(lambda x: O.vander(x[0], 3)), "tril": _u(lambda x: O.tril(x, -1), "sq"),
    "triu": _u(lambda x: O.triu(x, 1), "sq"), "diag": _u(lambda x: O.diag(x[0])),
    "diagflat": _u(lambda x: O.diagflat(x[0])), "diagonal": _u(lambda x: O.diagonal(x, axis1=1, axis2=2), "sq"),
    "trace": _u(lambda x: O.trace(x, axis1=1, axis2=2), "sq"),
    "broadcast_to": _u(lambda x: O.broadcast_to(x[:, None], (2, 3, 4))),
    "expand_dims": _u(lambda x: O.expand_dims(x, 1)), "squeeze": _u(lambda x: O.squeeze(x[:, None], 1)),
    "reshape": _u(lambda x: O.reshape(x, (2, 2, 2))), "moveaxis": _u(lambda x: O.moveaxis(x, 1, 2), "seq"),
    "swapaxes": _u(lambda x: O.swapaxes(x, 1, 2), "seq"), "flipud": _u(O.flipud),
    "rot90": _u(lambda x: O.rot90(x, axes=(1, 2)), "seq"), "roll": _u(lambda x: O.roll(x, 1, axis=1)),
    "repeat": _u(lambda x: O.repeat(x, 2, axis=1)), "tile": _u(lambda x: O.tile(x, (1, 2))),
    "pad": _u(lambda x: O.pad(x, ((0, 0), (1, 2)), mode="reflect")),
    "get_item": _u(lambda x: O.get_item(x, (slice(None), 1))),
    "slice": _u(lambda x: O.slice(x, (0, 1), (2, 2))),
    "slice_update": _b(lambda x, y: O.slice_update(x, (0, 1), y[:, :2])),
    "scatter": _u(lambda x: x + O.scatter(O.array([[0, 1], [1, 3]]), O.array([1.0, 2.0]), (2, 4))),
    "scatter_update": _b(lambda x, y: O.scatter_update(x, [[0, 1], [1, 3]], y[0, :2])),
    "take": _u(lambda x: O.take(x, [3, 0, 2], axis=1)),
    "take_along_axis": _b(lambda x, y: O.take_along_axis(x, O.argsort(y, axis=1), axis=1)),
    "split": _u(lambda x: O.split(x, 2, axis=1)[1]), "array_split": _u(lambda x: O.array_split(x, 3, axis=1)[0]),
    "hsplit": _u(lambda x: O.hsplit(x, 2)[0]), "vsplit": _u(lambda x: O.vsplit(x, 2)[1]),
    "dsplit": _u(lambda x: O.dsplit(x, 2)[0], "seq"), "unstack": _u(lambda x: O.unstack(x, axis=1)[2]),
    "rearrange": _u(lambda x: O.rearrange(x, "b t c -> b c t"), "seq"),
    "meshgrid": _b(lambda x, y: O.meshgrid(x[0], y[0])[0] * 2.0),
    "extract_sequences": _u(lambda x: O.extract_sequences(x, 16, 8), "sig"),
    "unfold": _u(lambda x: O.unfold(O.transpose(x, (0, 3, 1, 2)), 3), "img"),
    "fold": _u(lambda x: O.fold(O.unfold(O.transpose(x, (0, 3, 1, 2)), 2, stride=2), (8, 8), 2, stride=2),
               "img"),
    "depth_to_space": _u(lambda x: O.depth_to_space(O.concatenate([x, x[..., :1]], -1), 2), "img"),
    "space_to_depth": _u(lambda x: O.space_to_depth(x, 2), "img"),
    "quantile": _u(lambda x: O.quantile(x, 0.3, axis=1)), "percentile": _u(lambda x: O.percentile(x, 70, axis=1)),
    "nanquantile": _u(lambda x: O.nanquantile(x, 0.3, axis=1)),
    "nanpercentile": _u(lambda x: O.nanpercentile(x, 70, axis=1)), "moments": _u(lambda x: O.moments(x, [1])[1]),
    "argpartition": _u(lambda x: O.sort(O.take_along_axis(x, O.argpartition(x, 2, axis=1)[:, :2], 1), axis=1)),
    "top_k": _u(lambda x: O.top_k(x, 2)[0]), "in_top_k": _b(lambda x, y: O.in_top_k(O.argmax(y, 1), x, 2)),
    "searchsorted": _u(lambda x: O.searchsorted(O.array([-1.0, 0.0, 1.0]), x[0])),
    "digitize": _u(lambda x: O.digitize(x, [-1.0, 0.0, 1.0])),
    "histogram": _u(lambda x: O.histogram(x[0], bins=4, range=(-2.0, 2.0))[0]),
    "isin": _b(lambda x, y: O.isin(x, y), "i", "i"),
    "unravel_index": _u(lambda x: O.unravel_index(x, (2, 4))[1], "i"),
    "segment_sum": _u(lambda x: O.segment_sum(O.transpose(x), O.array([0, 0, 1, 1]), num_segments=2)),
    "segment_max": _u(lambda x: O.segment_max(O.transpose(x), O.array([0, 0, 1, 1]), num_segments=2)),
    "segment_min": _u(lambda x: O.segment_min(O.transpose(x), O.array([0, 1, 1, 1]), num_segments=2)),
    "segment_prod": _u(lambda x: O.segment_prod(O.transpose(x), O.array([0, 0, 0, 1]), num_segments=2)),
    "one_hot": _u(lambda x: O.one_hot(x, 8), "i"), "multi_hot": _u(lambda x: O.multi_hot(x, 8), "i"),
    "cdist": _b(lambda x, y: O.cdist(x, y), "seq", "seq"), "corrcoef": _u(O.corrcoef),
    "cholesky": _u(O.cholesky, "spd"), "cholesky_inverse": _u(lambda x: O.cholesky_inverse(O.cholesky(x[0])), "spd"),
    "det": _u(O.det, "sq"), "inv": _u(O.inv, "sq"), "logdet": _u(O.logdet, "spd"),
    "slogdet": _u(lambda x: O.slogdet(x)[1], "sq"), "eigh": _u(lambda x: O.eigh(x)[0], "spd"),
    "qr": _u(lambda x: O.abs(O.qr(x)[1]), "sq"), "svd": _u(lambda x: O.svd(x, compute_uv=False), "sq"),
    "pinv": _u(O.pinv, "sq"), "solve": _b(lambda x, y: O.solve(x, _t(y[:, :2, :3])), "spd", "seq"),
    "solve_triangular": _b(lambda x, y: O.solve_triangular(O.cholesky(x), _t(y[:, :2, :3]), lower=True),
                           "spd", "seq"),
    "lstsq": _b(lambda x, y: O.lstsq(x[0], y[0]), "sq", "sq"),
    "lu_factor": _u(lambda x: O.lu_factor(x)[0], "spd"), "matrix_rank": _u(O.matrix_rank, "sq"),
    "fft": _b(lambda x, y: O.fft((x, y))[0]), "fft2": _b(lambda x, y: O.fft2((x[None], y[None]))[1]),
    "ifft2": _b(lambda x, y: O.ifft2((x[None], y[None]))[0]), "rfft": _u(lambda x: O.rfft(x)[1]),
    "irfft": _b(lambda x, y: O.irfft((x, y))), "stft": _u(lambda x: O.stft(x, 16, 8, 16)[0], "sig"),
    "istft": _u(lambda x: O.istft(O.stft(x, 16, 8, 16), 16, 8, 16), "sig"),
    "polar": _b(lambda x, y: O.real(O.polar(O.abs(x), y))),
    "view_as_complex": _u(lambda x: O.real(O.view_as_complex(O.reshape(x, (2, 2, 2))))),
    "view_as_real": _b(lambda x, y: O.view_as_real(O.polar(O.abs(x), y))),
    "psnr": _b(lambda x, y: O.psnr(O.sigmoid(x), O.sigmoid(y), 1.0)),
    "average_pool": _u(lambda x: O.average_pool(x, 2, 2), "img"), "max_pool": _u(lambda x: O.max_pool(x, 2, 2), "img"),
    "adaptive_average_pool": _u(lambda x: O.adaptive_average_pool(x, (4, 2)), "img"),
    "adaptive_max_pool": _u(lambda x: O.adaptive_max_pool(x, (4, 2)), "img"),
    "conv": _u(lambda x: O.conv(x, O.ones((3, 3, 3, 2)) * 0.1, padding="same"), "img"),
    "conv_transpose": _u(lambda x: O.conv_transpose(x, O.ones((2, 2, 2, 3)) * 0.1, strides=2), "img"),
    "depthwise_conv": _u(lambda x: O.depthwise_conv(x, O.ones((3, 3, 3, 1)) * 0.1), "img"),
    "separable_conv": _u(lambda x: O.separable_conv(x, O.ones((3, 3, 3, 1)) * 0.1, O.ones((1, 1, 3, 2))), "img"),
    "batch_normalization": _u(lambda x: O.batch_normalization(x, O.zeros((4,)), O.ones((4,)) * 2, axis=-1)),
    "binary_crossentropy": _b(lambda x, y: O.binary_crossentropy(O.sigmoid(y), x, from_logits=True)),
    "categorical_crossentropy": _b(lambda x, y: O.categorical_crossentropy(x, y, from_logits=True), "prob"),
    "sparse_categorical_crossentropy": _b(lambda x, y: O.sparse_categorical_crossentropy(x[:, 0] % 4, y,
                                                                                         from_logits=True), "i"),
    "ctc_loss": _b(lambda x, y: O.ctc_loss(O.array([[1, 2], [2, 1]]), O.concatenate([x, y], 1)[:, :, None]
                                            + O.zeros((1, 1, 4)), O.array([2, 2]), O.array([8, 8]))),
    "dot_product_attention": _b(lambda x, y: O.dot_product_attention(x[:, :, None], y[:, :, None],
                                                                     y[:, :, None]), "seq", "seq"),
    "associative_scan": _u(lambda x: O.associative_scan(O.add, x, axis=1)),
    "cond": _u(lambda x: O.cond(O.sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)),
    "switch": _u(lambda x: O.switch(O.cast(O.sum(x) > 0, "int32"), [lambda a: a * 2.0, lambda a: a - 1.0], x)),
    "fori_loop": _u(lambda x: O.fori_loop(0, 3, lambda i, a: a * 0.5 + 1.0, x)),
    "while_loop": _u(lambda x: O.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 0.5), (0, x))[1]),
    "scan": _u(lambda x: O.scan(lambda c, a: (c + a, c * a), O.zeros((4,)), x)[1]),
    "map": _u(lambda x: O.map(lambda a: a * 2.0 + 1.0, x)),
    "vectorized_map": _u(lambda x: O.vectorized_map(lambda a: O.sum(a * a), x)),
    "vectorize": _u(lambda x: O.vectorize(lambda a: O.sum(a * a), signature="(n)->()")(x)),
    "jvp": _u(lambda x: O.jvp(O.sin, (x,), (O.ones_like(x),))[1]),
}


def _specs():
    specs = {name: _u(getattr(O, name), dom) for name, dom in _UNARY.items()}
    specs.update({name: _b(getattr(O, name), *doms) for name, doms in _BINARY.items()})
    specs.update(_SPECIAL)
    return specs


SPECS = _specs()
