"""Keras weights written shard by shard, straight from the IR's arrays, in Keras 3's sharded layout.

Note [sharded keras weights]: Keras 3's ``model.save_weights("model.weights.json", max_shard_size=GB)`` writes
``model.weights.json`` (``{"metadata": {"total_size"}, "weight_map": {"/layers/dense/vars":
"model_00000.weights.h5"}}``) and ``model_0000k.weights.h5`` files whose groups follow Keras' walk of the model
(``layers/<snake_case class>[_n]/vars/<i>``, nested layers under their attribute names). ``load_weights`` of the
``.json`` reads them back. portx writes the same files without giving the model its weights first: the model is
built inside a ``keras.StatelessScope`` that leaves every variable uninitialised (no weight memory), and Keras'
own walk (``saving_lib._save_state``) runs over it with Keras' own ``ShardedH5IOStore``, which is handed, for
each variable it visits, the array the emit rules produced for it. So the group paths, the shard boundaries and
the index are Keras' by construction (tests/targets/keras_jax/test_sharded.py compares them with
``save_weights``), only one tensor is in memory at a time, and the pages of a memory-mapped source tensor are
released once it is written (Note [lazy weights] in weights/safetensors.py).

Note [direct dataset writes]: Keras' ``ShardedH5IOStore.__setitem__`` copies each array twice before h5py sees it
(``backend.convert_to_numpy`` is ``np.array``, once in the sharded store and once in the H5 store), and h5py
makes a third, C-ordered copy of a strided view: a transposed ``Dense`` kernel was copied element by element down
the columns of the memory-mapped source (the 1B Llama folder's 2.5 GB took 46 s to write; the floor writes as
many bytes in 2 s). ``DirectStore`` keeps Keras' bookkeeping (its shard-size count, a new shard where the next
array would not fit, the weight map's entry per group, a bfloat16 dataset's ``dtype`` attribute) and writes
each dataset a band of rows at a time, each band copied in cache-sized tiles (Note [tiled copies] in
weights/tiles.py): one band in memory besides the source's pages, and the datasets Keras' own writer makes
(test_sharded.py compares them with ``save_weights``, dataset by dataset).

Example:
    >>> write_sharded(abstract_model(module), {"dense": [kernel, bias]}, "out/model.weights.json", max_shard_size=2.0)
"""
from __future__ import annotations

import contextlib

import math
from pathlib import Path

import numpy as np

from ...errors import BadValue
from ...outputs.staging import size_text
from ...weights import release_pages
from ...weights.tiles import strips

__all__ = ["write_sharded", "write_dataset", "given_layers", "abstract_model", "SHARDED_FILE", "DEFAULT_SHARD_GB"]

#: the index Keras' sharded save writes; its shards are ``model_00000.weights.h5``, ...
SHARDED_FILE = "model.weights.json"
#: ``--max-shard-size`` default, in Keras' unit (GB of 1024**3 bytes)
DEFAULT_SHARD_GB = 2.0


def abstract_model(module):
    """``module.build_model()`` with every variable left uninitialised (no weight memory), for good: Keras
    initialises the variables a stateless scope deferred when the next one closes (a ``stateless_call``)."""
    import keras
    from keras.src.backend.common import global_state

    with keras.StatelessScope(initialize_variables=False):
        model = module.build_model()
    mine = {id(v) for v in model.weights}
    waiting = global_state.get_global_attribute("uninitialized_variables") or []
    global_state.set_global_attribute("uninitialized_variables", [v for v in waiting if id(v) not in mine])
    return model


def write_sharded(model, weights: dict, path, max_shard_size=DEFAULT_SHARD_GB) -> list:
    """Write ``weights`` ({layer name: arrays in ``layer.weights`` order}; popped as written) for ``model``
    (``abstract_model`` of an imported model.py) to ``path`` (``model.weights.json``) and its shards; returns the shard
    paths. A variable no emit rule gave (a dropout's seed) is written as its initializer makes it."""
    from keras.src.saving import saving_lib

    arrays = {}
    for layer, given in given_layers(model, weights):
        arrays.update({id(v): a for v, a in zip(layer.weights, given)})
    _check_fits(model, arrays, max_shard_size)
    store = _store_class()(Path(path), max_shard_size, arrays)
    try:
        saving_lib._save_state(model, weights_store=store, assets_store=None, inner_path="", visited_saveables=set())
    except BaseException:
        _discard(store)
        raise
    store.close()
    placed = store.sharding_config["weight_map"].values()  # a layer whose variables span shards lists them all
    return [Path(path).with_name(n) for n in sorted({n for v in placed for n in ([v] if isinstance(v, str) else v)})]


def _discard(store) -> None:
    """Close the shard a failed write left open (a full disk, ``ulimit -f``), so none of its HDF5 handles is left
    to fail again, and print, when it is freed; the caller re-raises the failure itself (its OUT is staged)."""
    h5_file = getattr(store, "h5_file", None)
    if h5_file is not None:
        with contextlib.suppress(Exception):
            h5_file.close()


def given_layers(model, weights: dict):
    """Yield (layer, its arrays) for each layer of ``model`` named in ``weights`` ({layer name: arrays in
    ``layer.weights`` order}; popped as yielded). A layer Keras left out of the model is skipped: it was written
    before an output it feeds became a constant (``_output_ref``: no input reaches it)."""
    for name in list(weights):
        given = weights.pop(name)
        try:
            layer = model if name == model.name else model.get_layer(name)
        except ValueError:
            continue
        expected = [tuple(v.shape) for v in layer.weights]
        if expected != [tuple(np.shape(a)) for a in given]:
            raise RuntimeError(f"layer {name}: emit rule produced weights {[np.shape(a) for a in given]}, layer "
                               f"expects {expected}")
        yield layer, given


def _check_fits(model, arrays, max_shard_size):
    """BadValue (exit 2) naming the largest weight when it alone exceeds a shard (Keras would stop half-way)."""
    name, nbytes = max(((v.path, int(np.asarray(arrays[id(v)]).nbytes)) for v in model.weights if id(v) in arrays),
                       key=lambda row: row[1], default=("", 0))
    if nbytes > max_shard_size * 1024**3:
        raise BadValue(f"--max-shard-size {size_text(int(max_shard_size * 1024**3))}: weight {name} alone is "
                       f"{size_text(nbytes)}", hint="give a larger --max-shard-size")


def _store_class():
    from keras.src.backend import standardize_dtype
    from keras.src.saving.saving_lib import ShardedH5IOStore
    from keras.src.utils.dtype_utils import dtype_size

    class DirectStore(ShardedH5IOStore):
        """Keras' sharded writer, given each variable's array instead of reading the (uninitialised) variable,
        and writing it a band of rows at a time (Note [direct dataset writes])."""

        def __init__(self, path, max_shard_size, arrays):
            self.arrays = arrays  # id(variable) -> array
            super().__init__(path, max_shard_size, mode="w")

        def __setitem__(self, key, value):
            array = self.arrays.pop(id(value), None)
            if array is None:  # no emit rule gave it: what Keras' initializer makes (a seed generator's state)
                array = np.asarray(value._initializer(value.shape, dtype=value.dtype))
            array = np.asarray(array)
            self._restore_h5_file()
            size = math.prod(array.shape) * dtype_size(standardize_dtype(array.dtype)) / 8  # Keras' count
            self.total_shard_size += size
            self.current_shard_size += size
            if self.current_shard_size > self.max_shard_size:
                self.close()
                self.h5_file = self._create_new_shard_file()
                self.current_shard_size = size
            if not self._h5_entry_initialized:
                self._create_h5_group(self._h5_entry_path)
            write_dataset(self._h5_entry_group, key, array)
            self._place(self._h5_entry_group.name, self.current_shard_path.name)
            release_pages(array)

        def _place(self, group, shard):
            """The weight map's entry for ``group`` as Keras keeps it: its first variable's shard, then a list of
            the shards its variables lie in (one entry long when they share one)."""
            weight_map = self.sharding_config["weight_map"]
            if group not in weight_map:
                weight_map[group] = shard
                return
            placed = weight_map[group] if isinstance(weight_map[group], list) else [weight_map[group]]
            weight_map[group] = placed if shard in placed else [*placed, shard]

    return DirectStore


def write_dataset(group, key, array) -> None:
    """``group[key]``: ``array`` as Keras' H5 store writes it (a bfloat16 one tagged), a band of rows at a time."""
    dataset = group.create_dataset(key, shape=array.shape, dtype=array.dtype)
    if array.dtype.name == "bfloat16":
        dataset.attrs["dtype"] = "bfloat16"
    if array.ndim == 0:
        dataset[()] = array
        return
    for first, rows in strips(array):
        if rows.size:
            dataset[first:first + len(rows)] = rows
