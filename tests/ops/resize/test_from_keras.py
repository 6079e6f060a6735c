"""Keras import of the resize family (Resizing, UpSampling*D): a one-layer functional model with fixed seeds,
lowered, validated, the IR's NumPy reference compared with Keras (JAX backend) at 1e-5 (nearest resizes
exactly), then each target's emitted model compared with Keras.

Example:
    pytest tests/ops/resize/test_from_keras.py -k Resizing
"""
import numpy as np
import pytest
from keras import layers as L

from portx.ops.resize import RESIZE
from portx.ops.resize.from_keras import jax_resize_matrix, keras_nearest_table
from portx.ops.shape.index import INDEX_SELECT
from tests.support.keras_harness import check_keras_layer, check_keras_model, keras_case, seeded, single_layer

#: Keras' own layers from seed 0; the resizes have no weights to re-draw
SEEDED = {"seed": 0, "randomize": False}
EXACT = {**SEEDED, "atol": 0.0, "rtol": 0.0}

CASES = [
    keras_case(lambda: L.Resizing(7, 10), (4, 6, 2), id="Resizing-bilinear-up", **SEEDED),
    keras_case(lambda: L.Resizing(3, 5, interpolation="bilinear"), (8, 9, 2), id="Resizing-bilinear-down", **SEEDED),
    keras_case(lambda: L.Resizing(3, 4, antialias=True), (8, 9, 2), id="Resizing-bilinear-antialias", **SEEDED),
    keras_case(lambda: L.Resizing(9, 7, interpolation="bicubic"), (4, 5, 2), id="Resizing-bicubic-up", **SEEDED),
    keras_case(lambda: L.Resizing(3, 4, interpolation="bicubic"), (7, 9, 2), id="Resizing-bicubic-down", **SEEDED),
    keras_case(lambda: L.Resizing(6, 9, interpolation="lanczos3"), (4, 5, 2), id="Resizing-lanczos3", **SEEDED),
    keras_case(lambda: L.Resizing(4, 4, crop_to_aspect_ratio=True), (6, 9, 2), id="Resizing-crop-to-aspect",
               **SEEDED),
    keras_case(lambda: L.Resizing(4, 4, pad_to_aspect_ratio=True, fill_value=0.5), (6, 9, 2),
               id="Resizing-pad-to-aspect", **SEEDED),
    keras_case(lambda: L.Resizing(5, 7, data_format="channels_first"), (2, 4, 6), id="Resizing-channels-first",
               **SEEDED),
    keras_case(lambda: L.UpSampling2D((2, 3)), (3, 4, 2), id="UpSampling2D-nearest", **EXACT),
    keras_case(lambda: L.UpSampling2D(2, interpolation="bilinear"), (3, 4, 2), id="UpSampling2D-bilinear", **SEEDED),
    keras_case(lambda: L.UpSampling2D(2, interpolation="bicubic"), (3, 4, 2), id="UpSampling2D-bicubic", **SEEDED),
    keras_case(lambda: L.UpSampling2D(2, data_format="channels_first"), (2, 3, 3), id="UpSampling2D-channels-first",
               **EXACT),
    keras_case(lambda: L.UpSampling1D(3), (4, 2), id="UpSampling1D", **EXACT),
    keras_case(lambda: L.UpSampling3D((2, 1, 2)), (2, 3, 2, 2), id="UpSampling3D", **EXACT),
]


@pytest.mark.parametrize("make, shapes, options", CASES)
def test_keras_layer_matches_reference(target, make, shapes, options):
    check_keras_layer(make, shapes, target=target, **options)


# 6 -> 37 rows: no torch nearest mode gives Keras' table, so that case lowers to stored-index gathers.
NEAREST_SIZES = [((4, 6), (6, 9)), ((6, 9), (4, 6)), ((5, 7), (8, 3)), ((3, 3), (6, 6)), ((7, 5), (7, 13)),
                 ((10, 10), (3, 17)), ((6, 3), (37, 5))]


@pytest.mark.parametrize("sizes", NEAREST_SIZES, ids=lambda s: f"{s[0]}->{s[1]}")
def test_nearest_resizing_is_exact(target, sizes):
    (h, w), (oh, ow) = sizes
    model = single_layer(L.Resizing(oh, ow, interpolation="nearest"), (h, w, 2))
    graph = check_keras_model(model, seeded((2, h, w, 2)), target=target, atol=0.0, rtol=0.0, specs=[f"2x{h}x{w}x2"],
                              randomize=False)
    want = INDEX_SELECT if sizes == ((6, 3), (37, 5)) else RESIZE
    assert any(n.op is want for n in graph.nodes)


def test_nearest_table_and_weights_follow_jax():
    import jax

    for m, n in ((2, 41), (10, 25), (6, 37), (14, 23), (20, 47), (299, 224), (224, 299), (7, 3)):
        x = np.arange(float(m), dtype=np.float32)
        np.testing.assert_array_equal(x[keras_nearest_table(m, n)], jax.image.resize(x, (n,), "nearest"))
    x = np.arange(11.0, dtype=np.float32)
    for n in (4, 7, 11, 16, 23):
        got = jax.image.resize(x, (n,), "nearest")
        np.testing.assert_array_equal(x[keras_nearest_table(11, n)], got)
        for method, antialias in (("bilinear", False), ("bicubic", False), ("lanczos5", False), ("bilinear", True)):
            want = jax.image.resize(x, (n,), method, antialias=antialias)
            np.testing.assert_allclose(jax_resize_matrix(method, 11, n, antialias) @ x, want, atol=1e-5)
