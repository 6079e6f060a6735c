"""safetensors files written tensor by tensor: the header from shapes and dtypes first, then each tensor's bytes.

Note [streamed safetensors]: ``safetensors.torch.save_file`` takes every tensor of a file at once, so a writer
whose tensors are made on demand (a kernel transposed at write time, Note [lazy relayout] in ops/_jax.py) would
hold a whole shard of them. The format needs no such thing: an 8-byte little-endian header length, a JSON header
({name: {"dtype", "shape", "data_offsets"}}, ``"__metadata__"``; padded with spaces to 8 bytes, as the reference
writer does), then the tensors' bytes back to back in the header's order. ``write_streamed`` computes the header
from ``(dtype, shape)`` alone and then asks for one tensor at a time, so writing holds one tensor beyond the data
already on disk. The result is read by ``safetensors`` itself (and by ``read_header``).

Example:
    >>> write_streamed("model.safetensors", {"fc.weight": ("float32", (4, 3))}, lambda name: arrays[name])
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from .safetensors import SAFETENSORS_DTYPES, itemsize

__all__ = ["write_streamed", "CODES"]

#: IR / NumPy dtype names -> safetensors dtype codes
CODES = {name: code for code, name in SAFETENSORS_DTYPES.items()}


def write_streamed(path, layout: dict, data_of, metadata=None, written=None) -> int:
    """Write ``layout`` ({name: (dtype name, shape)}, in file order) to ``path``; ``data_of(name)`` gives each
    tensor's C-ordered bytes (a NumPy array or any buffer), asked once, in order; ``written(name)`` follows each
    (a mapped source's pages can go: ``release_pages``). Returns the bytes of data.

    ValueError (a bug in the caller) when a tensor's bytes differ from what its dtype and shape declare.
    """
    header, offset = {"__metadata__": dict(metadata)} if metadata else {}, 0
    sizes = {}
    for name, (dtype, shape) in layout.items():
        sizes[name] = int(np.prod(shape, dtype=np.int64)) * itemsize(dtype)
        header[name] = {"dtype": CODES[dtype], "shape": [int(d) for d in shape],
                        "data_offsets": [offset, offset + sizes[name]]}
        offset += sizes[name]
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)
    with open(Path(path), "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name in layout:
            data = np.ascontiguousarray(data_of(name)).reshape(-1).view(np.uint8)
            if data.nbytes != sizes[name]:
                raise ValueError(f"{name}: {data.nbytes} bytes given, {sizes[name]} declared")
            f.write(data)
            del data
            if written is not None:
                written(name)
    return offset

