"""torch-xla emit rules for conv and conv_transpose: ``nn.ConvNd`` / ``nn.ConvTransposeNd`` submodules.

The IR already holds torch's weight layouts, so stored weights go into the module as they are.
Padding torch cannot express in the module (different begin and end amounts, as Keras "same"
with stride 2 gives) is an ``F.pad`` of the input, and the module pads nothing. Computed
weights (not stored arrays) use ``F.conv2d`` and friends. More than three spatial axes are
``Unsupported``: torch has no 4-d convolution.

Example generated code:
    self.conv1 = nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1)
    conv1 = self.conv1(x)
"""
from __future__ import annotations

from ...errors import Unsupported
from ..conv import CONV, CONV_TRANSPOSE, operands, stored

__all__ = ["conv_input"]


def conv_input(node, t, x, pads, fill=None):
    """(input expression, module padding): symmetric pads stay in the module, others become ``F.pad``."""
    pads = [tuple(int(v) for v in p) for p in pads]
    if all(lo == hi for lo, hi in pads):
        return t.ref(x), t.compact(lo for lo, _ in pads)
    value = f", value={t.lit(fill)}" if fill is not None else ""
    return f"F.pad({t.ref(x)}, {t.lit(t.torch_pads(pads))}{value})", 0


_DEFAULTS = {"stride": 1, "padding": 0, "output_padding": 0, "dilation": 1, "groups": 1}


def _options(t, attrs, padding, skip=()) -> dict:
    """Keyword arguments that differ from torch's defaults, in torch's order."""
    options = {"stride": t.compact(attrs["stride"]), "padding": padding,
               "output_padding": t.compact(attrs.get("output_padding", (0,))),
               "dilation": t.compact(attrs["dilation"]), "groups": attrs["groups"]}
    return {k: v for k, v in options.items() if k not in skip and v != _DEFAULTS[k]}


def _check_rank(rank):
    """Torch convolves 1 to 3 spatial axes; more is ``Unsupported``."""
    if not 1 <= rank <= 3:
        raise Unsupported(f"PyTorch has 1-d to 3-d convolutions, not {rank}-d")


def _functional_conv(node, t, fn, src, padding, skip=()):
    x, w, b = operands(node)
    options = "".join(f", {k}={t.lit(v)}" for k, v in _options(t, node.attrs, padding, skip).items())
    bias = t.ref(b) if b is not None else "None"
    t.assign(node, f"{fn}({src}, {t.ref(w)}, {bias}{options})")


@CONV.emits("torch-xla")
def _conv_to_torch(node, t):
    x, w, b = operands(node)
    rank = len(node.attrs["stride"])
    _check_rank(rank)
    src, padding = conv_input(node, t, x, node.attrs["pads"])
    if not stored(t, w, b):
        _functional_conv(node, t, f"F.conv{rank}d", src, padding, skip=("output_padding",))
        return
    out, per_group, *kernel = w.type.shape
    options = _options(t, node.attrs, padding, skip=("output_padding",))
    weights = {"weight": w, **({"bias": b} if b is not None else {})}
    kwargs = {"kernel_size": t.compact(kernel), **options, **({"bias": False} if b is None else {})}
    t.layer(node, f"Conv{rank}d", (per_group * node.attrs["groups"], out), kwargs, weights, [src])


@CONV_TRANSPOSE.emits("torch-xla")
def _conv_transpose_to_torch(node, t):
    x, w, b = operands(node)
    a = node.attrs
    rank = len(a["stride"])
    _check_rank(rank)
    padding = t.compact(a["padding"])
    if not stored(t, w, b):
        _functional_conv(node, t, f"F.conv_transpose{rank}d", t.ref(x), padding)
        return
    cin, per_group, *kernel = w.type.shape
    weights = {"weight": w, **({"bias": b} if b is not None else {})}
    kwargs = {"kernel_size": t.compact(kernel), **_options(t, a, padding), **({"bias": False} if b is None else {})}
    t.layer(node, f"ConvTranspose{rank}d", (cin, per_group * a["groups"]), kwargs, weights, [x])
