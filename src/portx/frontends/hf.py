"""Hugging Face checkpoint folders as a source: the architecture from config.json, the weights left on disk.

``load_hf_folder`` builds the model ``transformers`` names in the config (``AutoModelForCausalLM``, else
``AutoModel``) with its parameters on the meta device (no weight memory; the small buffers such as rotary
frequencies are real), then gives each parameter the zero-copy torch view of its bytes in the safetensors files
(Note [lazy weights] in weights/safetensors.py), so the module runs from the mapped files. It is traced by
torch.export like a live module, on made-up token ids (int64, batch 2, a few positions), with the batch and the
sequence length free (Note [free dims] in ir/types.py).

Note [remote code]: a config with ``auto_map`` names classes in Python files of the folder; building them runs
that code. It is refused unless ``trust_remote_code`` (``--trust-remote-code``), as docs/SECURITY.md says.

The config's ``dtype`` (``torch_dtype`` in older files) is kept: a bfloat16 checkpoint converts to bfloat16
weights; ``dtype="float32"`` widens them (which reads every weight into memory).

Example:
    >>> src = load_hf_folder("./Llama-3.2-1B/")
    >>> graph = src.lower()
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from ..errors import BadInput, first_line
from ..weights import open_folder
from .torch.live import from_module
from .torch.source import TorchSource

__all__ = ["load_hf_folder", "HF_DTYPES"]

#: what ``--dtype`` accepts for a Hugging Face folder ("config": the config's own dtype)
HF_DTYPES = ("config", "float32", "bfloat16", "float16")
_EXAMPLE = (2, 8)  # batch, positions of the made-up token ids (batch 2: Note [batch of one])


def load_hf_folder(path, trust_remote_code=False, dtype="config") -> TorchSource:
    """The folder's model as a TorchSource whose parameters are views of its safetensors files."""
    path = Path(path)
    folder = open_folder(path)
    if "auto_map" in folder.config and not trust_remote_code:  # Note [remote code]
        raise BadInput(f"{path / 'config.json'}: auto_map names Python code in the folder "
                       f"({', '.join(sorted(folder.config['auto_map']))}); building the model would run it",
                       hint="pass --trust-remote-code (trust_remote_code=True) only if you trust its author")
    model = _build(path, folder.config, trust_remote_code, _dtype(path, folder.config, dtype))
    _assign(model, folder, path, dtype)
    ids = torch.randint(0, min(int(getattr(model.config, "vocab_size", 2) or 2), 1000), _EXAMPLE,
                        generator=torch.Generator().manual_seed(0))
    src = from_module(_Logits(model), (ids,), label=path.name or str(path), free=["input_ids:1"])
    src.declared = [{"symbol": "sequence", "sites": [[0, 1]], "min": 1, "declared": True,
                     "max": getattr(model.config, "max_position_embeddings", None)}]
    src.store = folder.store  # the seam for streaming stages: one layer's tensors by name, pages released
    return src


class _Logits(torch.nn.Module):
    """The causal LM called with token ids alone, returning its logits (the hidden states for a base model)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        # the config's use_cache is left on: with it off, transformers slices its causal mask from a constant of
        # the traced length, which pins the sequence (an unused cache is dropped by torch.export)
        out = self.model(input_ids=input_ids)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def _dtype(path, config, wanted):
    if wanted not in HF_DTYPES:
        raise BadInput(f"--dtype {wanted}: unknown dtype", hint=f"choose one of {', '.join(HF_DTYPES)}")
    name = (config.get("dtype") or config.get("torch_dtype") or "float32") if wanted == "config" else wanted
    if name not in HF_DTYPES[1:]:
        raise BadInput(f"{path / 'config.json'}: dtype {name!r} is not one portx converts",
                       hint="pass --dtype float32 (or bfloat16) to choose one")
    return getattr(torch, name)


@contextlib.contextmanager
def _parameters_on_meta():
    """Parameters registered inside go to the meta device (no memory); buffers stay real (rotary tables)."""
    register = torch.nn.Module.register_parameter

    def on_meta(module, name, param):
        register(module, name, param)
        if param is not None:
            module._parameters[name] = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)

    torch.nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def _build(path, raw, trust, dtype):
    import transformers

    try:
        config = transformers.AutoConfig.from_pretrained(str(path), trust_remote_code=trust)
        auto = (transformers.AutoModelForCausalLM if any(a.endswith("ForCausalLM") for a in raw.get(
            "architectures") or ()) else transformers.AutoModel)
        with _parameters_on_meta():
            return auto.from_config(config, trust_remote_code=trust, dtype=dtype).eval()
    except BadInput:
        raise
    except Exception as exc:  # noqa: BLE001 - transformers raises anything on a config it cannot build
        raise BadInput(f"{path / 'config.json'}: transformers cannot build this model "
                       f"({first_line(exc, 200, type(exc).__name__)})",
                       hint="check model_type and architectures, or upgrade transformers") from None


def _assign(model, folder, path, dtype):
    """Every parameter and persistent buffer of ``model`` as its view in the files; BadInput naming the shard
    whose table disagrees with the config (a tensor the model lacks, a shape it does not take)."""
    store = folder.store
    expected = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    tensors = {}
    for name, entry in store.entries.items():
        if name not in expected:
            raise BadInput(f"{entry.file}: holds {name}, which the model config.json describes has no place for",
                           hint="the weights and config.json come from different models: fetch them together")
        if entry.shape != expected[name]:
            raise BadInput(f"{entry.file}: {name} is {list(entry.shape)}, config.json makes it "
                           f"{list(expected[name])}", hint="the weights and config.json come from different "
                                                           "models or versions: fetch them together")
        tensor = store.tensor(name)
        tensors[name] = tensor if dtype in ("config", entry.dtype) or not tensor.is_floating_point() else \
            tensor.to(getattr(torch, dtype))
    model.load_state_dict(tensors, strict=False, assign=True)
    model.tie_weights()
    empty = [n for n, p in model.named_parameters() if p.is_meta]
    if empty:
        raise BadInput(f"{path}: no weights for {len(empty)} parameters (first {empty[0]})",
                       hint="a shard is missing or the index is incomplete: fetch the whole checkpoint")
