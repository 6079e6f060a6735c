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

Example:
    >>> write_sharded(abstract_model(module), {"dense": [kernel, bias]}, "out/model.weights.json", max_shard_size=2.0)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...errors import BadValue
from ...staging import size_text
from ...weights import release_pages

__all__ = ["write_sharded", "abstract_model", "SHARDED_FILE", "DEFAULT_SHARD_GB"]

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
    for name in list(weights):
        given = weights.pop(name)
        try:
            layer = model if name == model.name else model.get_layer(name)
        except ValueError:  # written before an output it feeds became a constant (_output_ref: no input
            continue  # reaches it); Keras leaves the unreachable layer out of the model
        expected = [tuple(v.shape) for v in layer.weights]
        if expected != [tuple(np.shape(a)) for a in given]:
            raise RuntimeError(f"layer {name}: emit rule produced weights {[np.shape(a) for a in given]}, layer "
                               f"expects {expected}")
        arrays.update({id(v): a for v, a in zip(layer.weights, given)})
    _check_fits(model, arrays, max_shard_size)
    store = _store_class()(Path(path), max_shard_size, arrays)
    saving_lib._save_state(model, weights_store=store, assets_store=None, inner_path="", visited_saveables=set())
    store.close()
    placed = store.sharding_config["weight_map"].values()  # a layer whose variables span shards lists them all
    return [Path(path).with_name(n) for n in sorted({n for v in placed for n in ([v] if isinstance(v, str) else v)})]


def _check_fits(model, arrays, max_shard_size):
    """BadValue (exit 2) naming the largest weight when it alone exceeds a shard (Keras would stop half-way)."""
    name, nbytes = max(((v.path, int(np.asarray(arrays[id(v)]).nbytes)) for v in model.weights if id(v) in arrays),
                       key=lambda row: row[1], default=("", 0))
    if nbytes > max_shard_size * 1024**3:
        raise BadValue(f"--max-shard-size {size_text(int(max_shard_size * 1024**3))}: weight {name} alone is "
                       f"{size_text(nbytes)}", hint="give a larger --max-shard-size")


def _store_class():
    from keras.src.saving.saving_lib import ShardedH5IOStore

    class DirectStore(ShardedH5IOStore):
        """Keras' sharded writer, given each variable's array instead of reading the (uninitialised) variable."""

        def __init__(self, path, max_shard_size, arrays):
            self.arrays = arrays  # id(variable) -> array
            super().__init__(path, max_shard_size, mode="w")

        def __setitem__(self, key, value):
            array = self.arrays.pop(id(value), None)
            if array is None:  # no emit rule gave it: what Keras' initializer makes (a seed generator's state)
                array = np.asarray(value._initializer(value.shape, dtype=value.dtype))
            super().__setitem__(key, array)
            release_pages(array)

    return DirectStore

