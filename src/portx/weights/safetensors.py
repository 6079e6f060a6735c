"""safetensors files read lazily: the header parsed here, each tensor a memory-mapped view read when used.

Note [lazy weights]: a checkpoint's tensors are never copied into memory as a whole. ``read_header`` parses the
8-byte length and the JSON table of one file (dtype, shape, byte offsets per tensor) and checks it against the
file's size, so a truncated or damaged file fails with one line naming it before anything is built. A
``LazyStore`` maps each file once, copy-on-write (``mmap.ACCESS_COPY``): its arrays and torch tensors are
zero-copy views of the file's pages, writable as torch wants its parameters, and never written back. The kernel
reads a page when a view first touches it; ``release`` drops the pages of the files (``MADV_DONTNEED``) once a
layer has been written, so resident memory follows the layer being worked on, not the model.

Example:
    >>> store = LazyStore.open(["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
    >>> store.array("model.embed_tokens.weight").dtype
    dtype(bfloat16)
    >>> store.release()
"""
from __future__ import annotations

import json
import mmap
import struct
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BadInput
from .tensors import tensor_of

__all__ = ["Entry", "LazyStore", "read_header", "release_all", "release_pages", "itemsize", "SAFETENSORS_DTYPES"]

#: safetensors dtype codes -> NumPy / ml_dtypes names (the IR's dtype names)
SAFETENSORS_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
                      "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool",
                      "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "U16": "uint16", "U32": "uint32",
                      "U64": "uint64"}
_HEADER_LIMIT = 100 << 20
_STORES = weakref.WeakSet()  # every LazyStore alive: release_pages finds the mapping an array lies in  # safetensors itself refuses headers above 100 MB


@dataclass(frozen=True)
class Entry:
    """One tensor of a safetensors file: where its bytes are (absolute offsets in ``file``) and what they hold."""

    file: Path
    name: str
    dtype: str
    shape: tuple
    start: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start


def read_header(path) -> dict:
    """{tensor name: Entry} of the safetensors file ``path``; BadInput naming the file when it is truncated,
    damaged or holds a dtype portx cannot read. Example: ``read_header("model.safetensors")["lm_head.weight"]``."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        (length,) = struct.unpack("<Q", head) if len(head) == 8 else (None,)
        if length is None or length > _HEADER_LIMIT or 8 + length > size:
            raise BadInput(f"{path}: truncated safetensors header ({size} bytes on disk)",
                           hint="the file was cut short while copying or downloading: fetch it again")
        try:
            table = json.loads(f.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise BadInput(f"{path}: the safetensors header is not valid JSON",
                           hint="the file is damaged or not a safetensors file: fetch it again") from None
    base = 8 + length
    entries = {}
    for name, row in table.items():
        if name == "__metadata__":
            continue
        entries[name] = _entry(path, name, row, base, size)
    return entries


def _entry(path, name, row, base, size) -> Entry:
    try:
        dtype, shape, (begin, end) = SAFETENSORS_DTYPES.get(row["dtype"]), tuple(row["shape"]), row["data_offsets"]
    except (KeyError, TypeError, ValueError):
        raise BadInput(f"{path}: tensor {name} has no dtype, shape and data_offsets in the header",
                       hint="the file is damaged or not a safetensors file: fetch it again") from None
    if dtype is None:
        raise BadInput(f"{path}: tensor {name} has dtype {row['dtype']}, which portx does not read",
                       hint=f"save it as one of {', '.join(SAFETENSORS_DTYPES)}")
    want = int(np.prod(shape, dtype=np.int64)) * itemsize(dtype)
    if end - begin != want or begin < 0 or base + end > size:
        raise BadInput(f"{path}: tensor {name} {dtype}{list(shape)} needs {want} bytes at {begin}..{end} past the "
                       f"header, but the file holds {size - base}",
                       hint="the file is truncated or damaged: fetch it again")
    return Entry(path, name, dtype, shape, base + begin, base + end)


def itemsize(dtype) -> int:
    """Bytes per element of the dtype called ``dtype`` (ml_dtypes' bfloat16 and float8 included)."""
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, dtype, None) or dtype).itemsize


class LazyStore:
    """Tensors of one or more safetensors files, each read (memory-mapped) when asked for (Note [lazy weights]).

    Example: ``LazyStore.open(files).tensor("lm_head.weight")`` is a torch view of the file's bytes.
    """

    def __init__(self, entries: dict):
        self.entries = entries  # name -> Entry
        self._maps = {}  # file -> mmap, opened on first use
        _STORES.add(self)

    @classmethod
    def open(cls, files) -> "LazyStore":
        """The store over ``files`` (their headers read and checked now, their data mapped when used)."""
        entries = {}
        for file in files:
            entries.update(read_header(file))
        return cls(entries)

    def __contains__(self, name) -> bool:
        return name in self.entries

    def nbytes(self) -> int:
        """Bytes of every tensor in the store (nothing is read)."""
        return sum(e.nbytes for e in self.entries.values())

    def array(self, name) -> np.ndarray:
        """Tensor ``name`` as a NumPy view of the mapped file (bfloat16 and float8 as ml_dtypes' dtypes)."""
        import ml_dtypes

        entry = self.entries[name]
        dtype = np.dtype(getattr(ml_dtypes, entry.dtype, None) or entry.dtype)
        data = self._map(entry.file)
        count = entry.nbytes // dtype.itemsize
        return np.frombuffer(data, dtype=dtype, count=count, offset=entry.start).reshape(entry.shape)

    def tensor(self, name):
        """Tensor ``name`` as a torch tensor sharing the mapped pages (no copy)."""
        return tensor_of(self.array(name), copy=False)  # Note [one tensor conversion] (tensors.py)

    def layer(self, prefix) -> dict:
        """{name: torch view} of the tensors under ``prefix`` (``"model.layers.3."``): one layer's weights, for
        stages that hold a layer at a time; ``release`` (or ``release_pages``) once it is done."""
        return {name: self.tensor(name) for name in self.entries if name.startswith(prefix)}

    def _map(self, file):
        if file not in self._maps:
            with open(file, "rb") as f:  # copy-on-write: torch may ask for writable parameters; nothing is written
                self._maps[file] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        return self._maps[file]

    def regions(self) -> list:
        """(mmap, address of its first byte) of each file mapped so far."""
        return [(m, np.frombuffer(m, dtype=np.uint8, count=1).__array_interface__["data"][0])
                for m in self._maps.values()]

    def release(self) -> None:
        """Drop the resident pages of every mapped file (read again from disk if touched later)."""
        for mapped in self._maps.values():
            if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
                mapped.madvise(mmap.MADV_DONTNEED)

    def resident_files(self) -> list:
        """The files mapped so far (those ``release`` acts on)."""
        return sorted(str(f) for f in self._maps)



def release_all(arrays) -> None:
    """``release_pages`` of each array (a layer's weights once a framework holds its own copy)."""
    for array in arrays:
        release_pages(array)


def release_pages(array) -> None:
    """Drop the resident pages under ``array`` (NumPy, or a torch tensor) when its data lies in a file a LazyStore
    mapped (whatever views or torch tensors it went through); a no-op for any other array. Read from the file again if touched later.

    Example: ``release_pages(graph.params["lm_head.weight"].T)`` after the tensor is written.
    """
    if hasattr(array, "data_ptr"):  # a torch tensor (a bfloat16 one has no NumPy view)
        address, nbytes = array.data_ptr(), array.numel() * array.element_size()
    else:
        array = np.asarray(array)
        address, nbytes = array.__array_interface__["data"][0], array.nbytes
    if not nbytes or not hasattr(mmap, "MADV_DONTNEED"):
        return
    for store in list(_STORES):
        for mapped, begin in store.regions():
            if begin <= address < begin + len(mapped):
                first = (address - begin) - (address - begin) % mmap.PAGESIZE
                end = min(len(mapped), address - begin + nbytes)  # a transpose spans the same bytes
                mapped.madvise(mmap.MADV_DONTNEED, first, end - first)
                return
