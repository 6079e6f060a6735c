"""The names block arguments take from the layer argument a number feeds (Note [block arguments named for what
they feed] in src/portx/targets/arg_names.py), read from the real frameworks' signatures."""
import pytest

from portx.targets.arg_names import argument_name

__all__ = []


@pytest.mark.parametrize("text, name", [
    ("y = layers.ZeroPadding2D(((0, ", "padding"),  # EfficientNet's pad widths, inside a tuple of tuples
    ("y = layers.ZeroPadding2D(((0, 1), (0, ", "padding"),
    ("y = layers.Dropout(", "rate"),  # EfficientNet's drop rate
    ("y = layers.Conv2D(", "filters"),
    ("y = layers.Conv2D(8, ", "kernel_size"),
    ("y = layers.Conv2D(8, 3, strides=", "strides"),  # a keyword names itself
    ("y = layers.Conv2D(8, 3, strides=(2, ", "strides"),
    ("y = ops.pad(x, ((0, 0), (", "pad_width"),
    ("self.conv = nn.Conv2d(3, ", "out_channels"),
    ("self.pool = nn.MaxPool2d(", "kernel_size"),
    ("self.drop = nn.Dropout(", "p"),
    ("y = unknown_call(", "size"),  # nothing names it
    ("y = 3", "size"),
])
def test_argument_name_is_the_layer_argument_the_number_feeds(text, name):
    assert argument_name(text) == name
