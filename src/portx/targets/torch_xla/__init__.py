"""The ``torch-xla`` target: a plain PyTorch ``model.py`` + ``model.safetensors`` for PyTorch/XLA and torchax.

Weights past ``max_shard_size`` go to Hugging Face shards and ``model.safetensors.index.json`` (shards.py).

emitter.py writes the files (Note [XLA-friendly torch]), runtime.py loads and runs them and captures
``forward``'s locals, tpu.py proves the TPU lowering through torchax.

Example:
    >>> emitted = TORCH_XLA.emit(graph, "out/")
    >>> TORCH_XLA.run(TORCH_XLA.load("out/"), arrays)[0].shape
"""
from __future__ import annotations

from pathlib import Path

from ..base import Target
from ..codegen import import_by_path
from .emitter import HEADER, WEIGHTS_FILE, TorchEmitter, emit_torch
from .shards import INDEX_FILE, meta_built
from .runtime import build_in_memory, load_folder, run_torch, run_torch_with_locals
from .tpu import prove_torch_tpu_lowering

__all__ = ["TORCH_XLA", "TorchXla"]


class TorchXla(Target):
    """PyTorch for TPUs (PyTorch/XLA or torchax); its op table is ``torch_xla``."""

    name = "torch-xla"
    aliases = ("torch_xla",)
    table = "torch_xla"
    weights_file = WEIGHTS_FILE
    header = HEADER
    framework = "torch"  # frontends.base.TORCH

    def emitter(self, graph):
        return TorchEmitter(graph)

    def emit(self, graph, folder, max_shard_size=None) -> dict:
        """model.py and the weights: model.safetensors, or shards and an index past ``max_shard_size``
        (Note [torch shards] in shards.py): bytes or text ("2GB"), or GB as a float (``shard_gb``, as api gives it)."""
        if isinstance(max_shard_size, float):
            max_shard_size = max(1, round(max_shard_size * 1024**3))
        return emit_torch(graph, folder, max_shard_size)

    def weights_path(self, folder) -> Path:
        """``model.safetensors.index.json`` where the weights are sharded, else ``model.safetensors``."""
        index = Path(folder) / INDEX_FILE
        return index if index.is_file() else super().weights_path(folder)

    def load(self, path):
        return load_folder(path)

    def build(self, graph):
        """``graph``'s module holding its arrays, no weights file (Note [torch segments in memory] in runtime.py)."""
        return build_in_memory(graph)

    def load_abstract(self, path):
        """model.py's ``build_model()`` with its weights on the meta device (Note [weight budget] in
        verification/budget.py): parameter counts and the TPU proof (Note [abstract torch proof] in tpu.py)."""
        path = Path(path)
        return meta_built(import_by_path(path / "model.py" if path.is_dir() else path).build_model).eval()

    def runner(self, model):
        return lambda arrays: run_torch(model, arrays)

    def observe(self, model, arrays, names, code=None) -> dict:
        """The locals of one ``forward`` call (``code`` is not needed: the module itself is run)."""
        _, local = run_torch_with_locals(model, arrays)
        return {var: local[var] for var in names if var in local}

    def parameter_counts(self, model) -> dict:
        """Parameters that require grad; the rest of the state dict, without BatchNorm's step counters."""
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        stored = sum(t.numel() for k, t in model.state_dict().items() if not k.endswith("num_batches_tracked"))
        return {"trainable": int(trainable), "non_trainable": int(stored - trainable)}

    def prove_tpu(self, model, graph) -> dict:
        return prove_torch_tpu_lowering(model, graph)


TORCH_XLA = TorchXla()
