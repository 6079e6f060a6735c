"""Hugging Face checkpoint folders: ``config.json`` and the safetensors weights, checked before anything is built.

A folder holds ``config.json`` and either ``model.safetensors`` or shards ``model-0000k-of-0000n.safetensors``
with ``model.safetensors.index.json`` (``weight_map``: tensor name -> shard file). ``open_folder`` reads the
config, reads every shard's header (Note [lazy weights] in safetensors.py) and checks that the shards agree with
the index: a missing shard, a tensor the index places in a shard that does not hold it, or a shard holding tensors
the index does not list is one line naming the file (BadInput, exit 2).

Example:
    >>> folder = open_folder("./Llama-3.2-1B/")
    >>> folder.config["architectures"], folder.store.nbytes()
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from .safetensors import LazyStore, read_header

__all__ = ["HfFolder", "is_hf_folder", "open_folder", "INDEX_FILE", "SINGLE_FILE"]

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


@dataclass
class HfFolder:
    """A checked Hugging Face folder: its config (a dict) and its weights as a LazyStore."""

    path: Path
    config: dict
    store: LazyStore


def is_hf_folder(path) -> bool:
    """True for a folder with ``config.json`` and safetensors weights (what ``open_folder`` reads)."""
    path = Path(path)
    return path.is_dir() and (path / "config.json").is_file() and (
        (path / INDEX_FILE).is_file() or any(path.glob("*.safetensors")))


def _read_json(path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"{path}: not readable JSON ({type(exc).__name__})",
                       hint="the file is damaged: fetch it again") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: holds a {type(data).__name__}, expected a JSON object",
                       hint="the file is damaged: fetch it again")
    return data


def _weight_map(path) -> dict:
    """{shard file name: [tensor names]} from the index (or the single file's own table)."""
    index = path / INDEX_FILE
    if not index.is_file():
        single = path / SINGLE_FILE
        files = [single] if single.is_file() else sorted(path.glob("*.safetensors"))
        if len(files) != 1:
            raise BadInput(f"{path}: {len(files)} safetensors files and no {INDEX_FILE}",
                           hint=f"a sharded checkpoint needs its {INDEX_FILE} (save_pretrained writes it)")
        return {files[0].name: None}
    rows = _read_json(index).get("weight_map")
    if not isinstance(rows, dict) or not all(isinstance(v, str) for v in rows.values()):
        raise BadInput(f"{index}: has no weight_map of tensor name -> shard file",
                       hint="the index is damaged: fetch it again")
    shards = {}
    for name, file in rows.items():
        shards.setdefault(file, []).append(name)
    return shards


def open_folder(path) -> HfFolder:
    """The folder's config and lazily read weights, checked against the index (BadInput naming the file)."""
    path = Path(path)
    config = _read_json(path / "config.json")
    entries = {}
    for file, names in _weight_map(path).items():
        shard = path / file
        if Path(file).name != file or not shard.is_file():
            raise BadInput(f"{shard}: missing; {INDEX_FILE} places {len(names or [])} tensors in it",
                           hint="fetch every shard the index lists into the folder")
        table = read_header(shard)
        if names is not None:
            _check_table(shard, table, names)
        entries.update(table)
    return HfFolder(path, config, LazyStore(entries))


def _check_table(shard, table, names):
    missing = [n for n in names if n not in table]
    extra = sorted(set(table) - set(names))
    if missing or extra:
        said = (f"lacks {len(missing)} tensors the index places in it (first {missing[0]})" if missing else
                f"holds {len(extra)} tensors the index does not list (first {extra[0]})")
        raise BadInput(f"{shard}: {said}", hint=f"the shard and {INDEX_FILE} come from different saves: fetch "
                                                "both again")
