"""The text of ``model.py`` around what the emit rules write: the header, the block classes, ``Model`` and the
functions that build and load it; and ``Emitted``, what ``emit_torch`` returns.

Example:
    >>> text = model_text(emitter, ["x"])   # once emitter.init and emitter.body hold Model's statements
    >>> text.startswith(HEADER)
    True
"""
from __future__ import annotations

from ..codegen import literal, module_sentences
from .shards import BUFFERS_FILE, INDEX_FILE, SHARDED_FOOTER, WEIGHTS_FILE

__all__ = ["HEADER", "model_text", "Emitted"]

#: the first line of every model.py this emitter writes (how targets.TORCH_XLA recognises its folders)
HEADER = '"""PyTorch model written by portx.'


def model_text(emitter, args) -> str:
    """The whole ``model.py``: ``emitter``'s classes, ``Model`` with its ``__init__`` and ``forward(self, *args)``
    statements, then ``build_model()`` and ``load_model()`` (sharded or not)."""
    modules = "".join(row + "\n" for row in module_sentences(emitter.graph))
    weights, wording = (INDEX_FILE, f"the shards {INDEX_FILE} lists") if emitter.sharded else \
        (WEIGHTS_FILE, WEIGHTS_FILE)
    if emitter.computed:
        modules = f"The buffers the source computes (no state_dict keys) are in {BUFFERS_FILE}.\n" + modules
    text = _HEADER.format(weights=literal(weights), weights_text=wording, modules=modules,
                          json="import json\n" if emitter.sharded else "",
                          buffers=_BUFFERS.format(literal(BUFFERS_FILE)) if emitter.computed else "",
                          ordered=_ORDERED if "OrderedDict(" in emitter.init.text() else "")
    text += "".join("\n\n" + cls for cls in emitter.classes)
    text += "\n\nclass Model(nn.Module):\n"
    text += '    """The converted network: channels-first inside, static shapes but for free dims."""\n\n'
    text += "    def __init__(self):\n        super().__init__()\n"
    text += emitter.init.text() if emitter.init.text().strip() else ""
    text += f"\n    def forward(self{''.join(', ' + a for a in args)}):\n"
    text += emitter.body.text()
    footer = SHARDED_FOOTER if emitter.sharded else _FOOTER
    if emitter.computed:  # Note [computed buffers] in shards.py
        footer = footer.replace("\n\ndef load_model(", _LOAD_BUFFERS + "\n\ndef load_model(", 1)
        footer = footer.replace("    model.eval()\n", "    load_buffers(model)\n    model.eval()\n", 1)
    return text + footer


_ORDERED = "from collections import OrderedDict\n"  # named blocks (Note [named block containers] in containers.py)

_HEADER = HEADER + ''' Plain PyTorch: runs on CPU, GPU and TPU (PyTorch/XLA, torchax).

build_model() returns the architecture; load_model() returns it in eval mode with the weights in
{weights_text} beside this file. Shapes are static but for free dims read from the inputs
(x.shape[0]: the batch, unless pinned), and nothing in forward() syncs with the host.
{modules}"""
{json}import os
{ordered}
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), {weights})
{buffers}'''
#: where the buffers the source computes are (Note [computed buffers] in shards.py)
_BUFFERS = "BUFFERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), {})\n"

_LOAD_BUFFERS = '''

def load_buffers(model, buffers=None):
    """Set the buffers the source computes in its __init__ (persistent=False: not in the state_dict) from
    buffers.safetensors."""
    for key, tensor in load_file(buffers or BUFFERS).items():
        model.get_buffer(key).copy_(tensor)
'''

_FOOTER = '''

def build_model():
    """The architecture, with freshly initialised weights."""
    return Model()


def load_model(weights=None, device=None):
    """The model in eval mode with its converted weights (strict load), moved to ``device`` if given."""
    model = build_model()
    model.load_state_dict(load_file(weights or WEIGHTS), strict=True)
    model.eval()
    return model if device is None else model.to(device)
'''


class Emitted(dict):
    """emit_torch's result; its ``"model"`` (the module in eval mode holding the graph's arrays) is built when
    first read, so a caller that only writes (api, streaming verification) never holds it (Note [torch shards])."""

    def __init__(self, files, build):
        super().__init__(files)
        self.build = build

    def __missing__(self, key):
        if key != "model":
            raise KeyError(key)
        self["model"] = model = self.build().eval()
        return model
