"""The names block arguments take from the layer argument a number feeds (Note [block arguments named for what
they feed] in src/portx/targets/arg_names.py), read from the real frameworks' signatures."""
import pytest

from portx.targets.arg_names import argument_name, distinct_names

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


@pytest.mark.parametrize("bases, roles, names", [
    (["filters", "filters", "filters", "rate"], ["expand_conv", "se_reduce", "project_conv", "drop"],
     ["filters_expand", "filters_se_reduce", "filters_project", "rate"]),  # EfficientNet's block
    (["in_channels", "out_channels", "in_channels"], ["adjust_conv_1", "adjust_conv_1", "normal_conv_1"],
     ["in_channels_adjust", "out_channels", "in_channels_normal"]),  # NASNet's cell: one argument each
    (["out_channels", "out_channels"], ["sepconv1_pointwise", "sepconv2_pointwise"],
     ["out_channels_sepconv1", "out_channels_sepconv2"]),  # Xception's block
    (["filters", "filters"], ["conv_1", "conv_2"], ["filters_conv_1", "filters_conv_2"]),  # short roles alike: whole
    (["pad_width", "pad_width"], ["dwconv_pad", "dwconv_pad"], ["pad_width", "pad_width"]),  # one statement: numbered
])
def test_numbers_feeding_one_argument_are_named_for_the_layer_they_feed(bases, roles, names):
    assert distinct_names(bases, roles) == names
