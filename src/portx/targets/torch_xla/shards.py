"""The torch-xla target's weights on disk: one ``model.safetensors``, or Hugging Face shards with an index.

Note [torch shards]: weights larger than ``max_shard_size`` (default 2 GB, as Hugging Face's
``save_pretrained`` writes them) go to ``model-00001-of-0000N.safetensors`` files plus
``model.safetensors.index.json`` (``{"metadata": {"total_size": N}, "weight_map": {key: file}}``), the layout
``transformers``, ``safetensors`` and ``huggingface_hub`` read. Each shard is written from the emitter's state
(the IR's arrays) through ``Converted``: a tensor is made when its shard is written (a view of the array, or a
copy of a re-laid-out kernel, Note [lazy relayout] in ops/_jax.py) and dropped with the shard, so writing holds
one shard's bytes beyond the weights themselves, never a second full copy. The module's dtypes come from a
``skeleton``: ``build_model()`` on the meta device. The module itself (``emit``'s ``"model"``) is built only when
read: with its large tensors on the meta device, then given those same arrays (``load_state_dict(assign=True)``),
so the randomly initialised copy ``build_model()`` would make is never allocated. A tensor too large for one
shard gets a shard of its own.

Note [computed buffers]: a torch source registers some buffers with ``persistent=False``, computed in its
``__init__`` (the zoo Swin's relative position index and shift mask, a rotary embedding's ``inv_freq``): its
state_dict has no key for them. The emitted module cannot compute them (it has the values, not the code), and held
as persistent buffers read from model.safetensors they gave its ``state_dict()`` keys the source's has not, so the
source's own state_dict did not load strictly. A stored buffer whose name is no key of the source's
(``graph.meta["source_keys"]``: Note [the source's keys] in key_order.py) is registered ``persistent=False`` as the
source registers it, and its value goes to a file of its own, ``buffers.safetensors`` ({key: tensor}, keys as
``named_buffers()`` has them), which ``load_model()`` reads after the strict ``load_state_dict`` of model.safetensors
(or of the shards), copying each into its buffer (``load_buffers``). model.safetensors is then exactly a
``state_dict()``, the source's keys, as a person saving the source would write it, and the emitted loader stays
plain: two files, each read whole, no splitting of one file's keys. ``skeleton`` and ``module_on`` (the emit stage's
module, streaming verification's segments) take both kinds from the emitter's one ``state``: ``Converted`` with
``computed=True`` holds the keys ``named_buffers()`` has and ``state_dict()`` has not. A Keras source (no
``source_keys``) keeps every stored buffer persistent, as before; a small one is still written into ``__init__``.

Example:
    >>> index = write_weights({"fc.weight": w}, Path("out"), max_shard_size=1 << 20)
    >>> index.name                                # or "model.safetensors" when everything fits in one shard
    'model.safetensors.index.json'
"""
from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ...errors import BadValue
from ...ir.types import VIEWED_AS_INT
from ...weights import release_pages
from ...weights.safetensors_writer import write_streamed

__all__ = ["DEFAULT_MAX_SHARD_SIZE", "WEIGHTS_FILE", "BUFFERS_FILE", "INDEX_FILE", "SHARDED_FOOTER", "shard_bytes",
           "plan_shards", "state_sizes", "is_sharded", "write_weights", "tensor_view", "module_on", "skeleton",
           "meta_built", "Converted"]

#: Hugging Face's default shard size (``save_pretrained(max_shard_size="2GB")``, decimal units as it counts)
DEFAULT_MAX_SHARD_SIZE = 2 * 10**9
#: one file holding every weight (the emitter's ``WEIGHTS_FILE``), and the index of a sharded set
WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
#: the buffers the source computes, apart from its state_dict (Note [computed buffers])
BUFFERS_FILE = "buffers.safetensors"
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMG]I?B|B)?\s*", re.I)

#: the end of a model.py whose weights are sharded: load_model() reads the index, then each shard in turn
SHARDED_FOOTER = '''

def build_model():
    """The architecture, with freshly initialised weights."""
    return Model()


def load_weights(model, index=None):
    """Load the shards that ``index`` (model.safetensors.index.json) lists into ``model``, one at a time."""
    index = index or WEIGHTS
    with open(index, encoding="utf-8") as f:
        weight_map = json.load(f)["weight_map"]
    differ = sorted(set(model.state_dict()) ^ set(weight_map))
    if differ:
        raise KeyError(f"{index} and the model disagree on {differ[:4]}")
    for name in sorted(set(weight_map.values())):
        shard = load_file(os.path.join(os.path.dirname(index), name))
        if set(shard) != {key for key, file in weight_map.items() if file == name}:
            raise KeyError(f"{name} does not hold the tensors {index} lists for it")
        model.load_state_dict(shard, strict=False)


def load_model(weights=None, device=None):
    """The model in eval mode with its converted weights (every tensor), moved to ``device`` if given."""
    model = build_model()
    load_weights(model, weights)
    model.eval()
    return model if device is None else model.to(device)
'''


def shard_bytes(size) -> int:
    """``max_shard_size`` in bytes: an int, or text with a unit as Hugging Face writes it (``"2GB"``, ``"500MiB"``).

    Example: ``shard_bytes("1.5GB")`` -> ``1500000000``. BadValue for anything else, or a size below 1 byte.
    """
    if size is None:
        return DEFAULT_MAX_SHARD_SIZE
    match = _SIZE.fullmatch(size) if isinstance(size, str) else None
    if isinstance(size, (int, float)) and not isinstance(size, bool):
        count = int(size)
    elif match:
        count = int(float(match.group(1)) * _UNITS[(match.group(2) or "").upper()])
    else:
        count = 0
    if count < 1:
        raise BadValue(f"max_shard_size {size!r} is not a size", hint="give bytes (2000000000) or a size with a "
                       "unit: 2GB, 500MB, 512MiB")
    return count


def plan_shards(sizes: dict, limit: int) -> list:
    """The state dict's keys in shards of at most ``limit`` bytes each, in order (``sizes``: {key: bytes}).

    Example: ``plan_shards({"a": 6, "b": 6, "c": 3}, 10)`` -> ``[["a"], ["b", "c"]]``.
    """
    shards, used = [[]], 0
    for key, size in sizes.items():
        if shards[-1] and used + size > limit:
            shards.append([])
            used = 0
        shards[-1].append(key)
        used += size
    return shards if shards[0] else []


def state_sizes(state: dict) -> dict:
    """{key: bytes} of a state dict of arrays or tensors."""
    return {key: int(a.nbytes if hasattr(a, "nbytes") else np.asarray(a).nbytes) for key, a in state.items()}


def is_sharded(state: dict, max_shard_size=None) -> bool:
    """True when ``state`` is written as several shards (Note [torch shards])."""
    return len(plan_shards(state_sizes(state), shard_bytes(max_shard_size))) > 1


def tensor_view(array):
    """A torch tensor sharing ``array``'s memory (bfloat16 and float8 through an integer view); a copy only where
    the array is not contiguous."""
    import torch

    array = np.ascontiguousarray(array).reshape(np.shape(array))  # ascontiguousarray makes 0-d arrays 1-d
    name = str(array.dtype)
    with warnings.catch_warnings():  # a read-only array (a JAX buffer) is shared too: nothing here writes to it
        warnings.simplefilter("ignore", UserWarning)
        if name in VIEWED_AS_INT:
            return torch.from_numpy(array.view(VIEWED_AS_INT[name][0])).view(getattr(torch, name))
        return torch.from_numpy(array)


def _unshared(state, keys) -> dict:
    """``{key: contiguous tensor}`` for ``keys``; a tensor sharing memory with one before it (the module takes
    the IR's arrays, and equal constants can be one array) is copied, as safetensors refuses shared tensors."""
    out, seen = {}, set()
    for key in keys:
        tensor = state[key].contiguous()
        where = tensor.untyped_storage().data_ptr()
        out[key] = tensor.clone() if where in seen and tensor.numel() else tensor
        seen.add(where)
    return out


def write_weights(state: dict, folder: Path, max_shard_size=None, sharded=None, name=WEIGHTS_FILE) -> Path:
    """Write ``state`` ({key: tensor}) as ``model.safetensors`` (or ``name``), or as shards and their index past
    ``max_shard_size`` (Note [torch shards]); ``sharded`` forces the choice the written model.py made.
    Returns the file ``load_model()`` reads."""
    from safetensors.torch import save_file

    sizes = state.sizes() if isinstance(state, Converted) else state_sizes(state)
    shards = plan_shards(sizes, shard_bytes(max_shard_size))

    def write(path, keys):
        if isinstance(state, Converted):  # one tensor at a time: Note [streamed safetensors]
            write_streamed(path, state.layout(keys), state.data, metadata={"format": "pt"},
                           written=lambda key: release_pages(state.state[key]))
        else:
            save_file(_unshared(state, keys), str(path), metadata={"format": "pt"})

    if not (len(shards) > 1 if sharded is None else sharded):
        write(folder / name, list(state))
        return folder / name
    weight_map = {}
    for i, keys in enumerate(shards, start=1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        write(folder / name, keys)
        weight_map.update(dict.fromkeys(keys, name))
    index = {"metadata": {"total_size": sum(sizes.values())}, "weight_map": weight_map}
    path = folder / INDEX_FILE
    path.write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    return path


def skeleton(build_model, state: dict):
    """``build_model()`` on the meta device (no weight memory), or normally built where a module cannot be; its
    state_dict gives each key's dtype (Note [torch shards]).

    RuntimeError (a bug in an emit rule) when ``state``'s arrays do not fit the module's state_dict.
    """
    model = meta_built(build_model)
    expected = {k: tuple(v.shape) for k, v in model.named_buffers() if k in state}  # Note [computed buffers]
    expected.update((k, tuple(v.shape)) for k, v in model.state_dict().items())
    got = {k: tuple(np.shape(a)) for k, a in state.items()}
    if expected != got:
        diff = sorted(set(expected.items()) ^ set(got.items()))[:4]
        raise RuntimeError(f"emit rules produced weights that do not fit the module's state_dict: {diff}")
    return model


def meta_built(build_model):
    """``build_model()`` with its weights on the meta device, or normally built where a module computes with
    them in ``__init__``."""
    try:
        with _meta_weights():
            return build_model()
    except (RuntimeError, NotImplementedError, TypeError, ValueError):  # a module that computes in __init__
        return build_model()


class Converted(Mapping):
    """{key: tensor} of ``state``'s arrays as ``model``'s state_dict holds them, each made when read and
    dropped by the reader (Note [torch shards]): a transposed kernel is copied one tensor at a time. Its keys are
    ``model.state_dict()``'s, or with ``computed`` those of the non-persistent buffers ``state`` holds (Note
    [computed buffers])."""

    def __init__(self, state: dict, model, computed=False):
        kept = {k: t.dtype for k, t in model.state_dict().items()}
        self.state, self.dtypes = state, kept if not computed else \
            {k: t.dtype for k, t in model.named_buffers() if k in state and k not in kept}

    def __getitem__(self, key):
        return _as(tensor_view(self.state[key]), self.dtypes[key])

    def __iter__(self):  # the module's order, as its state_dict() would be written
        return iter(self.dtypes)

    def __len__(self):
        return len(self.dtypes)

    def layout(self, keys) -> dict:
        """{key: (dtype name, shape)} of ``keys``, without making any tensor (Note [streamed safetensors])."""
        return {k: (str(self.dtypes[k]).removeprefix("torch."), tuple(np.shape(self.state[k]))) for k in keys}

    def data(self, key):
        """The tensor's bytes as a NumPy uint8 array (made now, dropped by the writer)."""
        import torch

        return self[key].contiguous().reshape(-1).view(torch.uint8).numpy()

    def sizes(self) -> dict:
        """{key: bytes} without making any tensor."""
        return {k: int(np.prod(np.shape(self.state[k]), dtype=np.int64)) * dtype.itemsize
                for k, dtype in self.dtypes.items()}


def module_on(build_model, state: dict):
    """``build_model()`` holding ``state``'s arrays themselves (Note [torch shards]), or, where a module cannot
    be built on the meta device, a normally built one with the arrays copied in.

    RuntimeError (a bug in an emit rule) when the arrays do not fit the module's state_dict.
    """
    model = skeleton(build_model, state)
    held = model.state_dict()
    tensors, computed = dict(Converted(state, model)), dict(Converted(state, model, computed=True))
    if any(t.is_meta for t in held.values()) and _assigned(model, tensors, computed):
        return model
    model = build_model() if any(t.is_meta for t in held.values()) else model
    model.load_state_dict(tensors, strict=True)
    for key, tensor in computed.items():  # as load_buffers() does: Note [computed buffers]
        model.get_buffer(key).copy_(tensor)
    return model


def _assigned(model, tensors, computed) -> bool:
    """Give a meta-built ``model`` the ``tensors`` themselves, and the ``computed`` buffers theirs (Note [computed
    buffers]); False where a tensor stays on the meta device."""
    import torch

    model.load_state_dict(tensors, strict=True, assign=True)
    for key, tensor in computed.items():
        owner, _, name = key.rpartition(".")
        model.get_submodule(owner).register_buffer(name, tensor, persistent=False)
    for module in model.modules():  # a size-0 non-persistent buffer (zeros) is all that may stay on meta
        for name, buf in list(module.named_buffers(recurse=False)):
            if buf.is_meta and buf.numel() == 0:
                module.register_buffer(name, torch.zeros(buf.shape, dtype=buf.dtype), persistent=False)
    return not any(t.is_meta for t in list(model.parameters()) + list(model.buffers()))


def _as(tensor, dtype):
    return tensor if tensor.dtype == dtype else tensor.to(dtype)


@functools.lru_cache(maxsize=1)
def _meta_mode_class():
    from torch.overrides import TorchFunctionMode

    class MetaWeights(TorchFunctionMode):
        """``torch.empty`` / ``torch.zeros`` without a device allocate on the meta device: the tensors
        ``build_model()`` creates only to be replaced by the converted weights."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            import torch

            kwargs = dict(kwargs or {})
            if func in (torch.empty, torch.zeros) and kwargs.get("device") is None:
                kwargs["device"] = "meta"
            return func(*args, **kwargs)

    return MetaWeights


def _meta_weights():
    """A context in which ``build_model()`` allocates no weight memory (``_meta_mode_class``)."""
    return _meta_mode_class()()
