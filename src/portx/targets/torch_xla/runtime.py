"""Running a written PyTorch model: load it as a user would, run it on NumPy inputs, and capture its locals.

Example:
    >>> model = load_folder("out/")                  # what out/model.py's load_model() returns
    >>> outputs = run_torch(model, [x])
    >>> outputs, local = run_torch_with_locals(model, [x]); local["conv_b"].shape
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ..codegen import flatten_outputs, import_by_path
from ...weights.tensors import array_of, tensor_of
from .emitter import TorchEmitter
from .shards import module_on

__all__ = ["build_in_memory", "load_folder", "run_torch", "run_torch_with_locals"]


def load_folder(path):
    """The module written in ``path`` (an OUT folder or its model.py), as ``load_model()`` gives it (eval mode)."""
    path = Path(path)
    return import_by_path(path / "model.py" if path.is_dir() else path).load_model()


def build_in_memory(graph):
    """``graph``'s module in eval mode, holding the arrays its emit rules give, with no weights file written or read
    (Note [torch segments in memory]). Example: ``run_torch(build_in_memory(segment_graph), arrays)``."""
    emitter = TorchEmitter(graph)
    with tempfile.TemporaryDirectory(prefix="portx-segment-") as folder:
        path = Path(folder) / "model.py"
        path.write_text(emitter.emit_graph(), encoding="utf-8")
        build = import_by_path(path).build_model
    return module_on(build, emitter.state).eval()


# Note [torch segments in memory]: streaming verification (verification/streaming.py) builds one module per block
# of a large model. Emitted as OUT is and loaded back with ``load_model()``, each block's weights were written to a
# scratch safetensors file and read back whole (``load_file`` copies every tensor), so the 3B Llama preset wrote
# and read its 6.4 GB once more, and a segment held a loaded copy of each of its weights, the 0.79 GB embedding
# table included, of which it reads a few rows. Built here, model.py is still the emitted code, imported from a
# file, and the module is built on the meta device and given the segment's arrays themselves (``module_on``, as the
# emit stage's model): a re-laid-out kernel is copied once into its torch layout, a weight kept as it is stays a
# view of the mapped source file, whose pages streaming verification releases after the block.


def run_torch(model, arrays) -> list:
    """Run ``model`` on NumPy inputs under ``torch.no_grad()``; outputs as a list of arrays."""
    import torch

    device = next((t.device for t in list(model.parameters()) + list(model.buffers())), torch.device("cpu"))
    with torch.no_grad():
        out = model(*[tensor_of(a).to(device) for a in arrays])
    return [array_of(t) for t in flatten_outputs(out)]


def run_torch_with_locals(model, arrays):
    """``run_torch`` plus every local of ``forward`` as NumPy (``var_of`` names them), for localization."""
    import torch

    captured = {}
    code = type(model).forward.__code__

    def watch(frame, event, arg):
        if event == "return" and frame.f_code is code:
            captured.update(frame.f_locals)

    sys.setprofile(watch)
    try:
        outputs = run_torch(model, arrays)
    finally:
        sys.setprofile(None)
    return outputs, {k: array_of(v) for k, v in captured.items() if isinstance(v, torch.Tensor)}
