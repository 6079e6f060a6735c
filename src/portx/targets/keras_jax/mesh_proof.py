"""Proof on a mesh: the emitted model, loaded into its shards with ``layout_map(mesh)``, lowers for TPU with its
shardings, runs on as many CPU devices as the mesh has, and matches the model on one device.

Note [mesh proof devices]: JAX fixes its device count when it starts, and
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` only counts before that. When this process already has
the mesh's devices (a TPU slice, or a test session started with the flag) the proof runs here; otherwise it runs
in a child process started with the flag (``python -m portx.targets.keras_jax.mesh_proof``), which prints the
same result as JSON.

Note [collectives]: ``jax.export`` keeps the shardings as annotations and XLA partitions the program when it is
compiled for its devices, so the exported TPU module holds no collectives yet. They are counted in the program
compiled for the CPU mesh, which the same SPMD partitioner splits.

Example:
    >>> result = prove_sharded("out/", {"batch": 2, "model": 4}, [ids])
    >>> result["passed"], result["collectives"]["all-reduce"]
    (True, 4)
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ..codegen import import_by_path
from .tpu import stateless_fn

__all__ = ["prove_sharded", "prove_on_mesh", "COLLECTIVES"]

COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
_ATOL = _RTOL = 1e-5  # the float32 goal: sharded within 1e-5 of one device


def prove_sharded(folder, mesh: dict, arrays, timeout=600) -> dict:
    """Prove the model in ``folder`` on ``mesh`` here or in a child process (Note [mesh proof devices])."""
    import jax

    if jax.device_count() >= math.prod(mesh.values()):
        return prove_on_mesh(folder, mesh, arrays)
    with tempfile.TemporaryDirectory(prefix="portx-mesh-") as tmp:
        inputs = Path(tmp) / "inputs.npz"
        np.savez(inputs, *arrays)
        flags = os.environ.get("XLA_FLAGS", "")
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "KERAS_BACKEND": "jax",
               "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={math.prod(mesh.values())}".strip(),
               "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[3])] + sys.path)}
        args = [sys.executable, "-m", __name__, str(folder), json.dumps(mesh), str(inputs)]
        try:
            done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"verdict": "failed", "problems": [f"the mesh proof ran past {timeout} s"]}
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"verdict": "failed", "problems": [f"the mesh proof's process failed: {tail[:300]}"]}
    return json.loads(lines[-1])


def _loaded(folder, mesh):
    """(model on one device, model in its shards, jax Mesh, warnings layout_map gave)."""
    import jax
    import keras

    module = import_by_path(Path(folder) / "model.py")
    devices = jax.devices()[: math.prod(mesh.values())]
    device_mesh = keras.distribution.DeviceMesh(tuple(mesh.values()), tuple(mesh), devices=devices)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layout = module.layout_map(device_mesh)
    distribution = keras.distribution.ModelParallel(layout_map=layout, batch_dim_name="batch")
    plain = module.load_model()
    sharded = module.load_model(distribution=distribution)
    return plain, sharded, device_mesh.backend_mesh, [str(w.message) for w in caught]


def _variables(model):
    return [v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables]


def prove_on_mesh(folder, mesh: dict, arrays) -> dict:
    """The proof in this process, which must have the mesh's devices: specs, per-device weight bytes, the
    collectives (Note [collectives]), the TPU export and the largest difference from the one-device run."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    plain, sharded, jmesh, notes = _loaded(folder, mesh)
    batch = mesh.get("batch", 1)
    data = [NamedSharding(jmesh, PartitionSpec("batch") if a.ndim and a.shape[0] % batch == 0
                          else PartitionSpec()) for a in arrays]
    trainable, non_trainable = _variables(sharded)
    shardings = ([v.sharding for v in trainable], [v.sharding for v in non_trainable], *data)
    forward = jax.jit(stateless_fn(sharded), in_shardings=shardings)
    inputs = [jax.device_put(a, s) for a, s in zip(arrays, data)]
    with jax.default_matmul_precision("highest"):
        got = jax.tree.leaves(forward(trainable, non_trainable, *inputs))
        want = jax.tree.leaves(jax.jit(stateless_fn(plain))(*_variables(plain), *arrays))
        hlo = forward.lower(trainable, non_trainable, *inputs).compile().as_text()
        exported = jax.export.export(forward, platforms=["tpu"])(trainable, non_trainable, *inputs)
    return {**_weights_report(sharded, mesh), "collectives": count_collectives(hlo),
            "tpu_export": {"platform": "tpu", "devices": exported.nr_devices,
                           "sharded_inputs": sum(not s.is_fully_replicated for s in exported.in_shardings_jax(jmesh)
                                                 if s is not None)},
            **_difference(got, want), "notes": notes}


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


def _main(folder, mesh_json, inputs_path):
    with np.load(inputs_path) as data:
        arrays = [data[f"arr_{i}"] for i in range(len(data.files))]
    print(json.dumps(prove_on_mesh(folder, json.loads(mesh_json), arrays), default=str))


if __name__ == "__main__":
    _main(*sys.argv[1:4])
