"""Proof on a mesh: the emitted model, loaded into its shards with ``layout_map(mesh)``, lowers for TPU with its
shardings, runs on as many CPU devices as the mesh has, and matches the model on one device.

Note [mesh proof devices]: JAX fixes its device count when it starts, and
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` only counts before that. When this process already has
the mesh's devices (a TPU slice, or a test session started with the flag) the proof runs here; otherwise it runs
in a child process started with the flag (``python -m portx.targets.keras_jax.mesh_proof``), which answers with
the same result as JSON and stays for the next proof (Note [reused mesh process] in mesh_process.py).

Note [collectives]: ``jax.export`` keeps the shardings as annotations and XLA partitions the program when it is
compiled for its devices, so the exported TPU module holds no collectives yet. They are counted in the program
compiled for the CPU mesh, which the same SPMD partitioner splits.

Note [abstract mesh proof]: a model above the weight budget (Note [weight budget]) is proven without its weights:
model.py's model is built with uninitialised variables (``abstract_model``), each variable becomes a
``jax.ShapeDtypeStruct`` carrying the ``NamedSharding`` that ``layout_map(mesh)`` gives its path, and the sharded
forward is lowered and compiled for the CPU mesh (the collectives) and exported for TPU. Compiling allocates no
weight buffers, so a Llama-3-8B shape costs no weight memory. Nothing runs, so there is no difference to report:
the verdict is "lowered". ``emit_structure`` writes such a model.py without its weights files.

Example:
    >>> result = prove_sharded("out/", {"batch": 2, "model": 4}, [ids])
    >>> result["passed"], result["collectives"]["all-reduce"]
    (True, 4)
"""
from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ..codegen import import_by_path
from .emitter import KerasEmitter
from .mesh_process import MARK, ask
from .sharded import abstract_model
from .sharding import layout_map_source, variable_splits
from .tpu import stateless_fn

__all__ = ["prove_sharded", "prove_on_mesh", "prove_abstract_on_mesh", "emit_structure", "COLLECTIVES"]

COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
_CHILD_DEVICES = 8  # at least: one child serves every mesh of up to 8 devices (Note [reused mesh process])
_ATOL = _RTOL = 1e-5  # the float32 goal: sharded within 1e-5 of one device


def prove_sharded(folder, mesh: dict, arrays, timeout=600, abstract=False) -> dict:
    """Prove the model in ``folder`` on ``mesh`` here or in a child process (Note [mesh proof devices]);
    ``abstract``: on abstract weights, lowered and compiled but not run (Note [abstract mesh proof])."""
    import jax

    prove = prove_abstract_on_mesh if abstract else prove_on_mesh
    if jax.device_count() >= math.prod(mesh.values()):
        return prove(folder, mesh, arrays)
    with tempfile.TemporaryDirectory(prefix="portx-mesh-") as tmp:  # Note [reused mesh process]
        inputs = Path(tmp) / "inputs.npz"
        np.savez(inputs, *arrays)
        request = {"folder": str(folder), "mesh": mesh, "inputs": str(inputs), "prove": prove.__name__}
        return ask(__name__, max(math.prod(mesh.values()), _CHILD_DEVICES), request, timeout)


def _loaded(folder, mesh):
    """(model on one device, model in its shards, jax Mesh, warnings layout_map gave)."""
    import keras

    module = import_by_path(Path(folder) / "model.py")
    device_mesh, layout, notes = _device_mesh(module, mesh)
    distribution = keras.distribution.ModelParallel(layout_map=layout, batch_dim_name="batch")
    plain = module.load_model()
    sharded = module.load_model(distribution=distribution)
    return plain, sharded, device_mesh.backend_mesh, notes


def _device_mesh(module, mesh):
    """(keras DeviceMesh of this process's first devices, layout_map(mesh), the warnings layout_map gave)."""
    import jax
    import keras

    devices = jax.devices()[: math.prod(mesh.values())]
    device_mesh = keras.distribution.DeviceMesh(tuple(mesh.values()), tuple(mesh), devices=devices)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layout = module.layout_map(device_mesh)
    return device_mesh, layout, [str(w.message) for w in caught]


def _variables(model):
    return [v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables]


def prove_on_mesh(folder, mesh: dict, arrays) -> dict:
    """The proof in this process, which must have the mesh's devices: specs, per-device weight bytes, the
    collectives (Note [collectives]), the TPU export and the largest difference from the one-device run."""
    import jax

    plain, sharded, jmesh, notes = _loaded(folder, mesh)
    data = _data_shardings(jmesh, mesh, arrays)
    trainable, non_trainable = _variables(sharded)
    shardings = ([v.sharding for v in trainable], [v.sharding for v in non_trainable], *data)
    forward = jax.jit(stateless_fn(sharded), in_shardings=shardings)
    inputs = [jax.device_put(a, s) for a, s in zip(arrays, data)]
    with jax.default_matmul_precision("highest"):
        got = jax.tree.leaves(forward(trainable, non_trainable, *inputs))
        want = jax.tree.leaves(jax.jit(stateless_fn(plain))(*_variables(plain), *arrays))
        hlo = forward.lower(trainable, non_trainable, *inputs).compile().as_text()
        exported = jax.export.export(forward, platforms=["tpu"])(trainable, non_trainable, *inputs)
    return {**_weights_report(sharded, mesh), **_program_report(hlo, exported, jmesh), **_difference(got, want),
            "notes": notes}


def _data_shardings(jmesh, mesh, arrays):
    """The inputs split along the batch axis where it divides their first dim, else replicated."""
    from jax.sharding import NamedSharding, PartitionSpec

    batch = mesh.get("batch")  # a mesh of "model" alone (--mesh model=8) has no batch axis to split along
    return [NamedSharding(jmesh, PartitionSpec("batch") if batch and a.ndim and a.shape[0] % batch == 0
                          else PartitionSpec()) for a in arrays]


def prove_abstract_on_mesh(folder, mesh: dict, arrays) -> dict:
    """The proof on abstract weights (Note [abstract mesh proof]): per-device weight bytes from the shardings,
    the collectives of the program compiled for the CPU mesh, and the TPU export; nothing runs."""
    import jax

    module = import_by_path(Path(folder) / "model.py")
    device_mesh, layout, notes = _device_mesh(module, mesh)
    jmesh, model = device_mesh.backend_mesh, abstract_model(module)
    trainable, non_trainable = ([_sharded_spec(v, layout, jmesh) for v in variables]
                                for variables in (model.trainable_variables, model.non_trainable_variables))
    inputs = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s)
              for a, s in zip(arrays, _data_shardings(jmesh, mesh, arrays))]
    forward = jax.jit(stateless_fn(model))
    with jax.default_matmul_precision("highest"):
        hlo = forward.lower(trainable, non_trainable, *inputs).compile().as_text()
        exported = jax.export.export(forward, platforms=["tpu"])(trainable, non_trainable, *inputs)
    variables = model.trainable_variables + model.non_trainable_variables
    return {**_spec_report(variables, trainable + non_trainable, mesh), **_program_report(hlo, exported, jmesh),
            "abstract": True, "verdict": "lowered", "passed": None, "notes": notes}


def _program_report(hlo, exported, jmesh) -> dict:
    """The collectives of the CPU mesh's compiled ``hlo`` (Note [collectives]) and the TPU export's devices."""
    return {"collectives": count_collectives(hlo),
            "tpu_export": {"platform": "tpu", "devices": exported.nr_devices,
                           "sharded_inputs": sum(not s.is_fully_replicated for s in exported.in_shardings_jax(jmesh)
                                                 if s is not None)}}


def emit_structure(graph, folder) -> Path:
    """``folder``/model.py with its ``layout_map`` and no weights files, for ``prove_abstract_on_mesh`` (Note
    [abstract mesh proof]); the weights stay where the graph holds them (memory-mapped files are not read).
    Example: ``prove_sharded(emit_structure(graph, "out/").parent, mesh, arrays, abstract=True)``."""
    emitter = KerasEmitter(graph)
    code = emitter.emit_graph()
    path = Path(folder) / "model.py"
    path.write_text(code, encoding="utf-8")
    splits = variable_splits(graph, abstract_model(import_by_path(path)), emitter.layer_of, emitter.weights)
    path.write_text(code + layout_map_source(splits, graph.meta.get("blocks")), encoding="utf-8")
    return path


def _sharded_spec(variable, layout, jmesh):
    """``variable`` as a ShapeDtypeStruct with the NamedSharding ``layout`` gives its path (replicated if none)."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    found = layout[variable.path]
    axes = tuple(found.axes) if found is not None else ()
    return jax.ShapeDtypeStruct(tuple(variable.shape), jax.numpy.dtype(variable.dtype),
                                sharding=NamedSharding(jmesh, PartitionSpec(*axes)))


def _spec_report(variables, specs, mesh) -> dict:
    """``_weights_report``'s fields computed from the shardings alone (every device holds one shard's shape)."""
    total, per_device, shown = 0, 0, {}
    for variable, spec in zip(variables, specs):
        itemsize = spec.dtype.itemsize
        total += math.prod(spec.shape) * itemsize
        per_device += math.prod(spec.sharding.shard_shape(spec.shape)) * itemsize
        axes = tuple(spec.sharding.spec)
        shown[variable.path] = list(axes) + [None] * (len(spec.shape) - len(axes))
    return {"mesh": mesh, "specs": shown, "weight_bytes": total, "per_device_max": per_device,
            "per_device_min": per_device, "per_device_ratio": round(per_device / (total / mesh.get("model", 1)), 4)}


def _weights_report(model, mesh) -> dict:
    """Each variable's PartitionSpec, and the largest and smallest bytes of weights one device holds."""
    per_device, specs, total = {}, {}, 0
    for variable in model.weights:
        value = variable.value
        total += value.nbytes
        spec = tuple(getattr(value.sharding, "spec", ()))
        specs[variable.path] = list(spec) + [None] * (len(value.shape) - len(spec))
        for shard in value.addressable_shards:
            per_device[shard.device.id] = per_device.get(shard.device.id, 0) + shard.data.nbytes
    model_size = mesh.get("model", 1)
    return {"mesh": mesh, "specs": specs, "weight_bytes": total, "per_device_max": max(per_device.values()),
            "per_device_min": min(per_device.values()),
            "per_device_ratio": round(max(per_device.values()) / (total / model_size), 4)}


def count_collectives(hlo: str) -> dict:
    """How many of each collective a compiled HLO text holds (an async ``-start``/``-done`` pair counts once).

    Example: ``count_collectives("%a = f32[4] all-reduce(%x)")["all-reduce"] == 1``."""
    return {name: len(re.findall(rf"\s{name}(?:-start)?\(", hlo)) for name in COLLECTIVES}


def _difference(got, want) -> dict:
    worst, passed = 0.0, True
    for a, b in zip(got, want):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b))))
            passed &= bool(np.all(np.abs(a - b) <= _ATOL + _RTOL * np.abs(b)))
    return {"max_abs_diff": worst, "atol": _ATOL, "rtol": _RTOL, "passed": passed,
            "verdict": "ok" if passed else "mismatch"}


def _serve():
    """The child's loop (Note [reused mesh process]): a JSON request a line in, one marked answer line out."""
    import gc

    import keras

    proofs = {"prove_on_mesh": prove_on_mesh, "prove_abstract_on_mesh": prove_abstract_on_mesh}
    for line in sys.stdin:
        request = json.loads(line)
        with np.load(request["inputs"]) as data:
            arrays = [data[f"arr_{i}"] for i in range(len(data.files))]
        try:
            answer = proofs[request["prove"]](request["folder"], request["mesh"], arrays)
        except Exception as exc:  # noqa: BLE001 - the proof's failure is its finding; the process serves on
            answer = {"verdict": "failed", "problems": [f"{type(exc).__name__}: {str(exc)[:300]}"]}
        print(MARK + json.dumps(answer, default=str), flush=True)
        keras.backend.clear_session()  # the next model starts from a clean Keras state; its memory is freed
        gc.collect()


if __name__ == "__main__":
    _serve()
