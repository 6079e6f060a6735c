"""Weights kept on disk: lazy safetensors stores (read tensor by tensor, memory-mapped) and Hugging Face folders.

``safetensors.py`` parses a file's header and maps its tensors (Note [lazy weights]); ``hf_folder.py`` reads a
Hugging Face checkpoint folder (config.json, shards, index) and checks the shards against the index.

Example:
    >>> folder = open_folder("./Llama-3.2-1B/")
    >>> folder.store.tensor("model.embed_tokens.weight").dtype
    torch.bfloat16
"""
from __future__ import annotations

from .hf_folder import INDEX_FILE, HfFolder, is_hf_folder, open_folder
from .safetensors import Entry, LazyStore, read_header, release_all, release_pages
from .sizes import shard_gb

__all__ = ["Entry", "LazyStore", "read_header", "release_all", "release_pages", "shard_gb", "HfFolder", "is_hf_folder",
           "open_folder", "INDEX_FILE"]
