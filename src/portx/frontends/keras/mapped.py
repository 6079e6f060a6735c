"""A Keras folder's weights left in its ``.h5`` files: each variable a memory-mapped view of its dataset.

Note [mapped keras weights]: Keras' ``load_weights`` copies every dataset into a JAX buffer, so a model read from
a preset folder holds all of its weights in memory for the whole conversion. Keras writes each variable as an
uncompressed, contiguous HDF5 dataset (bfloat16 as 2-byte records with a ``dtype`` attribute), so its bytes sit
at one offset of the file (``Dataset.id.get_offset()``). While ``load_weights`` runs inside ``mapped_weights``,
reading a dataset gives a NumPy view of those bytes in a file mapped copy-on-write (a ``LazyStore``, Note [lazy
weights] in weights/safetensors.py), and a variable without a value that is assigned such a view keeps the view
itself as its value: nothing is read until used. Lowering then reads views of the file (Note [lazy relayout] in
ops/_jax.py); running a layer makes its weights JAX arrays for that call only; ``release_pages`` drops a layer's
pages once it has been written or run, so resident memory follows the layer being worked on. A dataset Keras
stored otherwise (chunked, compressed, of another dtype or shape than its variable) is loaded as Keras loads it.

Note [one copy per weight]: running a layer on such a view, Keras hands it to ``jnp.asarray``, which copies it
while every page of the file under it is resident: twice the weight's bytes at once. For the Llama 1B preset's
525 MB embedding that was the source run's peak (1.0 GB above the lowering's). ``materialized`` copies each
weight first, a band at a time, releasing the band's mapped pages as it goes, into page-aligned memory that JAX
takes without a copy (``jax.device_put``): once the weight's bytes, plus a band.

Example:
    >>> with mapped_weights(LazyStore({})):
    ...     model.load_weights("preset/model.weights.json")
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from ...weights import Entry, LazyStore, release_pages

__all__ = ["mapped_weights", "materialized"]

#: ``materialized`` copies this many bytes of a weight between releases of the mapped pages read
_BAND = 16 << 20
#: and aligns its copy to this (JAX on the CPU takes a NumPy array aligned so without copying it)
_ALIGN = 4096


def _view(store: LazyStore, dataset):
    """``dataset`` as a view of its mapped file, or None where its bytes are not one contiguous run."""
    offset = dataset.id.get_offset()
    if offset is None or dataset.chunks is not None or dataset.compression is not None or not dataset.size:
        return None
    dtype = "bfloat16" if dataset.attrs.get("dtype") == "bfloat16" else dataset.dtype.name
    if dtype != "bfloat16" and dataset.dtype.kind not in "fiub":
        return None
    file = Path(dataset.file.filename)
    name = f"{file.name}:{dataset.name}"
    entry = Entry(file, name, dtype, tuple(dataset.shape), offset, offset + dataset.id.get_storage_size())
    store.entries[name] = entry
    return store.array(name)


@contextlib.contextmanager
def mapped_weights(store: LazyStore):
    """Within: Keras' h5 reads give mapped views, and variables without a value keep such a view (Note [mapped
    keras weights])."""
    from keras.src.backend.common.variables import Variable, standardize_dtype
    from keras.src.saving import saving_lib

    read, assign, views = saving_lib.H5IOStore.__getitem__, Variable.assign, {}

    def mapped_read(self, key):
        dataset = saving_lib.safe_get_h5_dataset(self._h5_entry_group, key)
        view = _view(store, dataset) if hasattr(dataset, "id") else None
        if view is None:
            return read(self, key)
        views[id(view)] = view
        return view

    def kept_assign(self, value):
        if (id(value) in views and self._value is None and tuple(value.shape) == tuple(self.shape)
                and value.dtype.name == standardize_dtype(self.dtype)):
            self._value = value  # the mapped view itself
            return value
        return assign(self, value)

    saving_lib.H5IOStore.__getitem__, Variable.assign = mapped_read, kept_assign
    try:
        yield store
    finally:
        saving_lib.H5IOStore.__getitem__, Variable.assign = read, assign


@contextlib.contextmanager
def materialized(variables):
    """Within: each of ``variables`` whose value is a mapped view holds a JAX array of one copy of it, made band by
    band with the bands' mapped pages released (Note [one copy per weight]); the views are back after."""
    import jax
    import keras

    swapped = []
    for variable in variables if keras.backend.backend() == "jax" else ():  # another backend takes NumPy itself
        view = getattr(variable, "_value", None)
        if type(view) is np.ndarray and view.size:  # a JAX variable holds a NumPy value only as a mapped view
            swapped.append((variable, view))
            variable._value = jax.device_put(_aligned_copy(view))
    try:
        yield
    finally:
        for variable, view in swapped:
            variable._value = view


def _aligned_copy(view) -> np.ndarray:
    """``view`` copied into _ALIGN-aligned memory, _BAND bytes at a time, each band's pages released once read."""
    raw = np.empty(view.nbytes + _ALIGN, np.uint8)
    start = -raw.ctypes.data % _ALIGN
    copy = raw[start:start + view.nbytes].view(view.dtype).reshape(view.shape)
    source, target = np.ravel(view), copy.reshape(-1)  # a mapped view is contiguous: ravel is a view too
    step = max(1, _BAND // view.itemsize)
    for begin in range(0, source.size, step):
        target[begin:begin + step] = source[begin:begin + step]
        release_pages(source[begin:begin + step])
    return copy
