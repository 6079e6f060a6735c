"""A block without the shortcut reads Keras' default where the block with it writes a keyword (Note [an optional
shortcut] in targets/keras_jax/optional.py)."""
from portx.targets.keras_jax.optional import _with_default
from portx.targets.structure import pieces, render

VARIABLES = {"v_1_conv", "x"}


def _parts(text):
    return pieces(text, "c", VARIABLES)


def test_a_left_out_stride_reads_keras_default():
    first = _parts("v_1_conv = layers.Conv2D(8, 1, strides=2, name='c_1_conv')(x)")
    other = _parts("v_1_conv = layers.Conv2D(4, 1, name='c_1_conv')(x)")
    filled = _with_default(first, other)
    written = render(filled, string=lambda s: repr("c" + s))
    assert written == "v_1_conv = layers.Conv2D(4, 1, strides=1, name='c_1_conv')(x)"
    assert [k for k, _ in filled] == [k for k, _ in first]


def test_statements_that_differ_otherwise_stay_apart():
    first = _parts("v_1_conv = layers.Conv2D(8, 1, strides=2, name='c_1_conv')(x)")
    assert _with_default(first, _parts("v_1_conv = layers.Conv2D(4, 1, padding='same', name='c_1_conv')(x)")) is None
    same = _parts("v_1_conv = layers.Conv2D(4, 1, strides=2, name='c_1_conv')(x)")
    assert _with_default(first, same) is same
