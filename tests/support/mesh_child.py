"""Runs in a child process with 8 CPU devices (XLA_FLAGS set by ``run_on_mesh``): for each emitted Keras folder,
the mesh proof (targets/keras_jax/mesh_proof.py) and a 2-step fit under ModelParallel against the same fit on one
device. Prints one JSON line: {folder: {"proof": ..., "fit": ...}}.

Example: ``results = run_on_mesh({"gpt": folder}, {"batch": 2, "model": 4})``.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

__all__ = ["run_on_mesh"]

_ROOT = Path(__file__).resolve().parents[2]


def run_on_mesh(folders: dict, mesh: dict, devices=8, fit=(), timeout=900) -> dict:
    """{name: {"proof": ..., "fit": ...}} for {name: folder holding model.py and inputs.npz}; ``fit``: the names
    also fitted (models without dropout: its masks differ between layouts)."""
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", "JAX_PLATFORMS": "cpu",
           "KERAS_BACKEND": "jax", "PYTHONPATH": os.pathsep.join([str(_ROOT / "src"), str(_ROOT)])}
    args = [sys.executable, "-m", "tests.support.mesh_child", json.dumps(folders), json.dumps(mesh), json.dumps(list(fit))]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd=_ROOT)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _inputs(folder):
    with np.load(Path(folder) / "inputs.npz") as data:
        return [data[f"arr_{i}"] for i in range(len(data.files))]


def _fit(model, arrays, target, distribution=None):
    """Two SGD steps of an MSE fit (batch 2, no shuffling); the losses and the weights after."""
    import contextlib

    import keras

    with distribution.scope() if distribution is not None else contextlib.nullcontext():
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        x = arrays if len(arrays) > 1 else arrays[0]
        history = model.fit(x, target, batch_size=2, epochs=2, shuffle=False, verbose=0)
    return history.history["loss"], {v.path: np.asarray(v.value) for v in model.trainable_variables}


def fit_check(folder, mesh) -> dict:
    """Largest differences of the losses and updated weights, sharded fit against one device."""
    import jax
    import keras

    from portx.targets.codegen import import_by_path

    module = import_by_path(Path(folder) / "model.py")
    arrays = _inputs(folder)
    device_mesh = keras.distribution.DeviceMesh(tuple(mesh.values()), tuple(mesh), devices=jax.devices()[:8])
    distribution = keras.distribution.ModelParallel(layout_map=module.layout_map(device_mesh),
                                                    batch_dim_name="batch")
    plain = module.load_model()
    target = np.random.default_rng(1).standard_normal(plain(arrays if len(arrays) > 1 else arrays[0]).shape)
    losses, weights = _fit(plain, arrays, target.astype(np.float32))
    sharded_losses, sharded_weights = _fit(module.load_model(distribution=distribution), arrays,
                                           target.astype(np.float32), distribution)
    start = {v.path: np.asarray(v.value) for v in module.load_model().trainable_variables}
    return {"losses": losses, "loss_diff": float(np.max(np.abs(np.subtract(losses, sharded_losses)))),
            "weight_diff": max(float(np.max(np.abs(weights[k] - sharded_weights[k]))) for k in weights),
            "moved": max(float(np.max(np.abs(weights[k] - start[k]))) for k in weights)}


def _main(folders, mesh, fit):
    import jax

    from portx.targets.keras_jax.mesh_proof import prove_on_mesh

    with jax.default_matmul_precision("highest"):
        results = {name: {"proof": prove_on_mesh(folder, mesh, _inputs(folder)),
                          "fit": fit_check(folder, mesh) if name in fit else None}
                   for name, folder in folders.items()}
    print(json.dumps(results, default=str))


if __name__ == "__main__":
    _main(json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]))
