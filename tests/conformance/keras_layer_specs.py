"""The Keras layer conformance cases: builders per ``Class/variant`` and the refused classes with their reasons.

Each builder returns ``(model, example_inputs or None)``: a functional model around the layer, weights re-drawn
from a fixed seed (``randomize_weights``) so biases and statistics are not trivial. Used by keras_layer_cases.py.

Example:
    >>> model, example = CASES["Dense/bias"]()
"""
import os
import warnings

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers as L  # noqa: E402

from tests.support.keras_harness import randomize_weights  # noqa: E402

__all__ = ["CASES", "REFUSED"]

#: classes with no case, and why
REFUSED = {
    "InputLayer": "structural: every functional case has one",
    "Layer": "abstract base class",
    "Wrapper": "abstract base class (Bidirectional and TimeDistributed have cases)",
    "Lambda": "runs arbitrary Python code: refused in safe mode (exit 2), by design",
    "TFSMLayer": "loads an external TensorFlow SavedModel (external code and the TF backend)",
    "JaxLayer": "wraps an arbitrary user JAX function: external code, refused like Lambda",
    "FlaxLayer": "wraps an arbitrary Flax module: external code, refused like Lambda",
    "TorchModuleWrapper": "wraps a torch.nn.Module: torch backend only, convert the module itself instead",
    "StringLookup": "string inputs and a TensorFlow lookup table: not traceable by JAX",
    "TextVectorization": "string inputs and TensorFlow ops: not traceable by JAX",
    "Hashing": "TensorFlow hashing ops (tf.strings.to_hash_bucket): not traceable by JAX",
    "HashedCrossing": "TensorFlow string hashing: not traceable by JAX",
    "IntegerLookup": "TensorFlow lookup table: not traceable by JAX",
    "MaxNumBoundingBoxes": "bounding-box dict preprocessing for data pipelines; no tensor model to convert",
}


def _ready(model, example=None, quantize=None):
    randomize_weights(model)
    if quantize:
        with warnings.catch_warnings():  # "InputLayer does not have a quantize method"
            warnings.simplefilter("ignore")
            model.quantize(quantize)
    return model, example


def _seq(shape, *layers, dtype="float32", example=None, quantize=None):
    """Input of batchless ``shape`` through ``layers`` in order."""
    x = inp = keras.Input(shape, dtype=dtype)
    for layer in layers:
        x = layer(x)
    return _ready(keras.Model(inp, x), example, quantize)


def _multi(shapes, layer, **kwargs):
    """Several inputs into one merging / attention layer."""
    inputs = [keras.Input(s) for s in shapes]
    return _ready(keras.Model(inputs, layer(inputs, **kwargs)))


def _ints(shape, high, zeros=False):
    values = np.random.default_rng(0).integers(1 if zeros else 0, high, shape).astype("int32")
    if zeros:
        values[:, -2:] = 0
    return (values,)


def _masked_rnn(mask_layer, shape, dtype, example):
    inp = keras.Input(shape, dtype=dtype)
    out = L.LSTM(3)(mask_layer(inp))
    return _ready(keras.Model(inp, out), example)


def _rnn_state(layer, shape):
    inp = keras.Input(shape)
    outs = layer(inp)
    return _ready(keras.Model(inp, list(outs)))


def _attention(layer, q, v, **kwargs):
    qi, vi = keras.Input(q), keras.Input(v)
    return _ready(keras.Model([qi, vi], layer([qi, vi], **kwargs)))


def _mha(dtype="float32", **kwargs):
    q, v = keras.Input((4, 8)), keras.Input((6, 8))
    layer = L.MultiHeadAttention(num_heads=2, key_dim=4, dtype=dtype)
    return _ready(keras.Model([q, v], layer(q, v, **kwargs)))


def _mha_self(dtype="float32", **kwargs):
    x = keras.Input((5, 8))
    out = L.MultiHeadAttention(num_heads=2, key_dim=4, dtype=dtype)(x, x, **kwargs)
    return _ready(keras.Model(x, out))


def _normalization():
    layer = L.Normalization(mean=[0.5, -1.0, 2.0], variance=[1.0, 4.0, 0.25])
    return _seq((5, 3), layer)


def _discretization():
    return _seq((6,), L.Discretization(bin_boundaries=[-1.0, 0.0, 1.0]))


def _spectral():
    return _seq((4,), L.SpectralNormalization(L.Dense(3)))


def _reversible():
    return _seq((5,), L.ReversibleEmbedding(10, 4), dtype="int32", example=_ints((2, 5), 10))


_IMG, _SEQ, _VOL = (8, 8, 3), (6, 4), (4, 4, 4, 2)
#: the augmentation layers: identity at inference (training=False), constructed with their main factor
_RANDOM = {"RandomBrightness": dict(factor=0.2), "RandomColorDegeneration": dict(factor=0.5),
           "RandomColorJitter": dict(brightness_factor=0.2), "RandomContrast": dict(factor=0.3),
           "RandomCrop": dict(height=8, width=8), "RandomElasticTransform": dict(), "RandomErasing": dict(),
           "RandomFlip": dict(), "RandomGaussianBlur": dict(), "RandomGrayscale": dict(), "RandomHue": dict(factor=0.2),
           "RandomInvert": dict(), "RandomPerspective": dict(), "RandomPosterization": dict(factor=(1, 4)),
           "RandomRotation": dict(factor=0.2), "RandomSaturation": dict(factor=0.3), "RandomSharpness": dict(factor=0.3),
           "RandomShear": dict(x_factor=0.2), "RandomTranslation": dict(height_factor=0.1, width_factor=0.1),
           "RandomZoom": dict(height_factor=0.2), "AugMix": dict(), "CutMix": dict(), "MixUp": dict(),
           "RandAugment": dict()}
#: deterministic image preprocessing layers (applied at inference)
_IMAGE_PRE = {"AutoContrast": dict(), "Equalization": dict(), "Solarization": dict(threshold_factor=0.5),
              "ContrastLimitedAdaptiveHistogramEqualization": dict()}


def _cases():
    c = {
        "Dense/bias": lambda: _seq((4,), L.Dense(3)),
        "Dense/nobias": lambda: _seq((4,), L.Dense(3, use_bias=False, activation="relu")),
        "Dense/3d": lambda: _seq((5, 4), L.Dense(3)),
        "Dense/float16": lambda: _seq((4,), L.Dense(3, dtype="float16")),
        "Dense/bfloat16": lambda: _seq((4,), L.Dense(3, dtype="bfloat16")),
        "Dense/int8": lambda: _seq((8,), L.Dense(4), quantize="int8"),
        "Dense/int4": lambda: _seq((8,), L.Dense(4), quantize="int4"),
        "Dense/float8": lambda: _seq((8,), L.Dense(4), quantize="float8"),
        "EinsumDense/basic": lambda: _seq((4,), L.EinsumDense("ab,bc->ac", output_shape=3, bias_axes="c")),
        "EinsumDense/ellipsis": lambda: _seq((5, 4), L.EinsumDense("...b,bc->...c", output_shape=3, bias_axes="c")),
        "EinsumDense/heads": lambda: _seq((5, 4), L.EinsumDense("abc,cde->abde", output_shape=(None, 2, 3))),
        "EinsumDense/int8": lambda: _seq((5, 8), L.EinsumDense("abc,cd->abd", output_shape=(None, 4)),
                                         quantize="int8"),
        "EinsumDense/float8": lambda: _seq((5, 8), L.EinsumDense("abc,cd->abd", output_shape=(None, 4)),
                                           quantize="float8"),
        "Embedding/basic": lambda: _seq((5,), L.Embedding(10, 4), dtype="int32", example=_ints((2, 5), 10)),
        "Embedding/mask_zero": lambda: _masked_rnn(L.Embedding(10, 4, mask_zero=True), (5,), "int32",
                                                   _ints((2, 5), 10, zeros=True)),
        "Embedding/int8": lambda: _seq((5,), L.Embedding(10, 8), dtype="int32", example=_ints((2, 5), 10),
                                       quantize="int8"),
        "ReversibleEmbedding/basic": _reversible,
        "Masking/lstm": lambda: _masked_rnn(L.Masking(0.0), (5, 3), "float32", None),
        "Activation/relu": lambda: _seq((4,), L.Activation("relu")),
        "Activation/gelu": lambda: _seq((4,), L.Activation("gelu")),
        "ActivityRegularization/basic": lambda: _seq((4,), L.ActivityRegularization(l1=0.01)),
        "ELU/basic": lambda: _seq((4,), L.ELU(alpha=0.5)),
        "LeakyReLU/basic": lambda: _seq((4,), L.LeakyReLU(negative_slope=0.2)),
        "PReLU/basic": lambda: _seq((3, 4), L.PReLU()),
        "ReLU/max_value": lambda: _seq((4,), L.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.2)),
        "Softmax/axis": lambda: _seq((3, 4), L.Softmax(axis=1)),
        "Identity/basic": lambda: _seq((4,), L.Identity()),
        "Flatten/basic": lambda: _seq((3, 4), L.Flatten()),
        "Reshape/basic": lambda: _seq((3, 4), L.Reshape((2, 6))),
        "Permute/basic": lambda: _seq((3, 4, 5), L.Permute((2, 3, 1))),
        "RepeatVector/basic": lambda: _seq((4,), L.RepeatVector(3)),
        "Add/basic": lambda: _multi([(4,), (4,)], L.Add()),
        "Subtract/basic": lambda: _multi([(4,), (4,)], L.Subtract()),
        "Multiply/basic": lambda: _multi([(4,), (4,)], L.Multiply()),
        "Average/basic": lambda: _multi([(4,), (4,), (4,)], L.Average()),
        "Maximum/basic": lambda: _multi([(4,), (4,)], L.Maximum()),
        "Minimum/basic": lambda: _multi([(4,), (4,)], L.Minimum()),
        "Concatenate/axis1": lambda: _multi([(3, 4), (2, 4)], L.Concatenate(axis=1)),
        "Dot/basic": lambda: _multi([(4,), (4,)], L.Dot(axes=1)),
        "Dot/normalize": lambda: _multi([(3, 4), (5, 4)], L.Dot(axes=(2, 2), normalize=True)),
        "Conv1D/causal": lambda: _seq(_SEQ, L.Conv1D(3, 3, padding="causal", dilation_rate=2)),
        "Conv1D/groups": lambda: _seq(_SEQ, L.Conv1D(4, 3, groups=2, use_bias=False)),
        "Conv2D/same-strided": lambda: _seq(_IMG, L.Conv2D(4, 3, strides=2, padding="same")),
        "Conv2D/float16": lambda: _seq(_IMG, L.Conv2D(4, 3, dtype="float16")),
        "Conv2D/bfloat16": lambda: _seq(_IMG, L.Conv2D(4, 3, dtype="bfloat16")),
        "Conv3D/basic": lambda: _seq(_VOL, L.Conv3D(3, 2)),
        "Conv1DTranspose/basic": lambda: _seq(_SEQ, L.Conv1DTranspose(3, 3, strides=2)),
        "Conv2DTranspose/strided": lambda: _seq(_IMG, L.Conv2DTranspose(3, 3, strides=2, padding="same")),
        "Conv3DTranspose/basic": lambda: _seq(_VOL, L.Conv3DTranspose(2, 2, strides=2)),
        "DepthwiseConv1D/basic": lambda: _seq(_SEQ, L.DepthwiseConv1D(3, depth_multiplier=2)),
        "DepthwiseConv2D/basic": lambda: _seq(_IMG, L.DepthwiseConv2D(3, padding="same")),
        "SeparableConv1D/basic": lambda: _seq(_SEQ, L.SeparableConv1D(3, 3)),
        "SeparableConv2D/basic": lambda: _seq(_IMG, L.SeparableConv2D(4, 3, padding="same")),
        "MaxPooling1D/basic": lambda: _seq(_SEQ, L.MaxPooling1D(2)),
        "MaxPooling2D/same": lambda: _seq(_IMG, L.MaxPooling2D(3, strides=2, padding="same")),
        "MaxPooling3D/basic": lambda: _seq(_VOL, L.MaxPooling3D(2)),
        "AveragePooling1D/basic": lambda: _seq(_SEQ, L.AveragePooling1D(2)),
        "AveragePooling2D/same": lambda: _seq(_IMG, L.AveragePooling2D(3, strides=2, padding="same")),
        "AveragePooling3D/basic": lambda: _seq(_VOL, L.AveragePooling3D(2)),
        "GlobalAveragePooling1D/basic": lambda: _seq(_SEQ, L.GlobalAveragePooling1D()),
        "GlobalAveragePooling2D/basic": lambda: _seq(_IMG, L.GlobalAveragePooling2D()),
        "GlobalAveragePooling3D/keepdims": lambda: _seq(_VOL, L.GlobalAveragePooling3D(keepdims=True)),
        "GlobalMaxPooling1D/basic": lambda: _seq(_SEQ, L.GlobalMaxPooling1D()),
        "GlobalMaxPooling2D/basic": lambda: _seq(_IMG, L.GlobalMaxPooling2D()),
        "GlobalMaxPooling3D/basic": lambda: _seq(_VOL, L.GlobalMaxPooling3D()),
        "AdaptiveAveragePooling1D/basic": lambda: _seq((8, 3), L.AdaptiveAveragePooling1D(4)),
        "AdaptiveAveragePooling2D/basic": lambda: _seq(_IMG, L.AdaptiveAveragePooling2D((4, 2))),
        "AdaptiveAveragePooling3D/basic": lambda: _seq(_VOL, L.AdaptiveAveragePooling3D(2)),
        "AdaptiveMaxPooling1D/basic": lambda: _seq((8, 3), L.AdaptiveMaxPooling1D(4)),
        "AdaptiveMaxPooling2D/basic": lambda: _seq(_IMG, L.AdaptiveMaxPooling2D((4, 2))),
        "AdaptiveMaxPooling3D/basic": lambda: _seq(_VOL, L.AdaptiveMaxPooling3D(2)),
        "BatchNormalization/basic": lambda: _seq(_IMG, L.BatchNormalization()),
        "BatchNormalization/float16": lambda: _seq(_IMG, L.BatchNormalization(dtype="float16")),
        "LayerNormalization/basic": lambda: _seq((5, 4), L.LayerNormalization()),
        "LayerNormalization/rms": lambda: _seq((5, 4), L.LayerNormalization(rms_scaling=True)),
        "LayerNormalization/bfloat16": lambda: _seq((5, 4), L.LayerNormalization(dtype="bfloat16")),
        "GroupNormalization/basic": lambda: _seq(_IMG[:2] + (4,), L.GroupNormalization(groups=2)),
        "RMSNormalization/basic": lambda: _seq((5, 4), L.RMSNormalization()),
        "UnitNormalization/basic": lambda: _seq((5, 4), L.UnitNormalization()),
        "SpectralNormalization/dense": _spectral,
        "Normalization/adapted": _normalization,
        "Cropping1D/basic": lambda: _seq(_SEQ, L.Cropping1D((1, 2))),
        "Cropping2D/basic": lambda: _seq(_IMG, L.Cropping2D(((1, 2), (2, 1)))),
        "Cropping3D/basic": lambda: _seq(_VOL, L.Cropping3D(1)),
        "ZeroPadding1D/basic": lambda: _seq(_SEQ, L.ZeroPadding1D((1, 2))),
        "ZeroPadding2D/basic": lambda: _seq(_IMG, L.ZeroPadding2D(((1, 2), (2, 1)))),
        "ZeroPadding3D/basic": lambda: _seq(_VOL, L.ZeroPadding3D(1)),
        "UpSampling1D/basic": lambda: _seq(_SEQ, L.UpSampling1D(2)),
        "UpSampling2D/bilinear": lambda: _seq(_IMG, L.UpSampling2D(2, interpolation="bilinear")),
        "UpSampling2D/nearest": lambda: _seq(_IMG, L.UpSampling2D((2, 3))),
        "UpSampling3D/basic": lambda: _seq(_VOL, L.UpSampling3D(2)),
        "Dropout/basic": lambda: _seq((4,), L.Dropout(0.5)),
        "AlphaDropout/basic": lambda: _seq((4,), L.AlphaDropout(0.5)),
        "GaussianDropout/basic": lambda: _seq((4,), L.GaussianDropout(0.5)),
        "GaussianNoise/basic": lambda: _seq((4,), L.GaussianNoise(0.5)),
        "SpatialDropout1D/basic": lambda: _seq(_SEQ, L.SpatialDropout1D(0.5)),
        "SpatialDropout2D/basic": lambda: _seq(_IMG, L.SpatialDropout2D(0.5)),
        "SpatialDropout3D/basic": lambda: _seq(_VOL, L.SpatialDropout3D(0.5)),
        "SimpleRNN/basic": lambda: _seq(_SEQ, L.SimpleRNN(3)),
        "SimpleRNN/backwards": lambda: _seq(_SEQ, L.SimpleRNN(3, return_sequences=True, go_backwards=True)),
        "LSTM/basic": lambda: _seq(_SEQ, L.LSTM(3)),
        "LSTM/sequences": lambda: _seq(_SEQ, L.LSTM(3, return_sequences=True)),
        "LSTM/state": lambda: _rnn_state(L.LSTM(3, return_state=True), _SEQ),
        "LSTM/backwards": lambda: _seq(_SEQ, L.LSTM(3, go_backwards=True, use_bias=False)),
        "LSTM/mixed_float16": lambda: _seq(_SEQ, L.LSTM(3, dtype="mixed_float16")),
        "GRU/basic": lambda: _seq(_SEQ, L.GRU(3)),
        "GRU/sequences-state": lambda: _rnn_state(L.GRU(3, return_sequences=True, return_state=True), _SEQ),
        "GRU/reset_before": lambda: _seq(_SEQ, L.GRU(3, reset_after=False)),
        "RNN/lstm_cell": lambda: _seq(_SEQ, L.RNN(L.LSTMCell(3))),
        "LSTMCell/rnn": lambda: _seq(_SEQ, L.RNN(L.LSTMCell(3), return_sequences=True)),
        "GRUCell/rnn": lambda: _seq(_SEQ, L.RNN(L.GRUCell(3))),
        "SimpleRNNCell/rnn": lambda: _seq(_SEQ, L.RNN(L.SimpleRNNCell(3))),
        "StackedRNNCells/rnn": lambda: _seq(_SEQ, L.RNN(L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)]))),
        "Bidirectional/lstm": lambda: _seq(_SEQ, L.Bidirectional(L.LSTM(3))),
        "Bidirectional/gru-sequences": lambda: _seq(_SEQ, L.Bidirectional(L.GRU(3, return_sequences=True),
                                                                           merge_mode="sum")),
        "TimeDistributed/dense": lambda: _seq((3, 4), L.TimeDistributed(L.Dense(2))),
        "TimeDistributed/conv": lambda: _seq((2, 6, 6, 3), L.TimeDistributed(L.Conv2D(2, 3))),
        "ConvLSTM1D/basic": lambda: _seq((3, 6, 2), L.ConvLSTM1D(2, 3)),
        "ConvLSTM2D/sequences": lambda: _seq((3, 5, 5, 2), L.ConvLSTM2D(2, 3, padding="same",
                                                                         return_sequences=True)),
        "ConvLSTM3D/basic": lambda: _seq((2, 4, 4, 4, 1), L.ConvLSTM3D(2, 2)),
        "Attention/basic": lambda: _attention(L.Attention(), (4, 8), (6, 8)),
        "Attention/causal-scaled": lambda: _attention(L.Attention(use_scale=True), (5, 8), (5, 8),
                                                      use_causal_mask=True),
        "AdditiveAttention/basic": lambda: _attention(L.AdditiveAttention(), (4, 8), (6, 8)),
        "MultiHeadAttention/self": lambda: _mha_self(),
        "MultiHeadAttention/cross": lambda: _mha(),
        "MultiHeadAttention/causal": lambda: _mha_self(use_causal_mask=True),
        "MultiHeadAttention/float16": lambda: _mha_self("float16"),
        "MultiHeadAttention/bfloat16": lambda: _mha_self("bfloat16"),
        "GroupedQueryAttention/basic": lambda: _gqa(),
        "Rescaling/basic": lambda: _seq(_IMG, L.Rescaling(1 / 255.0, offset=-0.5)),
        "Resizing/bilinear": lambda: _seq(_IMG, L.Resizing(4, 6)),
        "Resizing/nearest": lambda: _seq(_IMG, L.Resizing(16, 12, interpolation="nearest")),
        "CenterCrop/basic": lambda: _seq(_IMG, L.CenterCrop(4, 6)),
        "Discretization/bins": _discretization,
        "CategoryEncoding/one_hot": lambda: _seq((1,), L.CategoryEncoding(5, output_mode="one_hot"), dtype="int32",
                                                 example=_ints((2, 1), 5)),
        "CategoryEncoding/multi_hot": lambda: _seq((3,), L.CategoryEncoding(5), dtype="int32",
                                                   example=_ints((2, 3), 5)),
        "MelSpectrogram/basic": lambda: _seq((256,), L.MelSpectrogram(fft_length=64, sequence_stride=32,
                                                                       num_mel_bins=8, sampling_rate=8000)),
        "STFTSpectrogram/basic": lambda: _seq((128, 1), L.STFTSpectrogram(frame_length=32, frame_step=16,
                                                                           fft_length=32)),
        "Pipeline/rescale-crop": lambda: _seq(_IMG, L.Pipeline([L.Rescaling(0.5), L.CenterCrop(4, 4)])),
    }
    for name, kwargs in {**_RANDOM, **_IMAGE_PRE}.items():
        c[f"{name}/inference"] = (lambda n=name, k=kwargs: _seq(_IMG, getattr(L, n)(**k)))
    return c


def _gqa():
    q, v = keras.Input((4, 8)), keras.Input((6, 8))
    layer = L.GroupQueryAttention(head_dim=4, num_query_heads=4, num_key_value_heads=2)
    return _ready(keras.Model([q, v], layer(q, v)))


CASES = _cases()
