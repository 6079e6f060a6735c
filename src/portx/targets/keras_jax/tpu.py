"""Proof of TPU lowering for an emitted Keras-JAX model, and the deployable jax.export artifact.

The emitted model is lowered with ``jax.export`` for the ``tpu`` platform (this works on a
CPU-only machine: lowering is the proof that XLA:TPU accepts the program, not a run). The
StableHLO is then scanned for what TPUs reject or handle badly (targets/stablehlo.py).

Example:
    >>> proof = prove_tpu_lowering(keras_model, graph)
    >>> proof["verdict"], proof["ops"]["convolution"]
    ('ok', 5)
"""
from __future__ import annotations

from ...progress import step
from ..stablehlo import input_specs, scan_stablehlo

__all__ = ["prove_tpu_lowering", "export_artifact", "stateless_fn"]


def stateless_fn(model):
    """``forward(trainable, non_trainable, *inputs)``: the model as a pure function of its variables."""
    def forward(trainable, non_trainable, *inputs):
        args = list(inputs) if len(inputs) > 1 else (inputs or [None])[0]  # None: a ConstantModel (no inputs)
        outputs, _ = model.stateless_call(trainable, non_trainable, args)
        return outputs
    return forward


def _specs(model, graph):
    import jax
    import jax.numpy as jnp

    def spec(v):
        return jax.ShapeDtypeStruct(tuple(v.shape), jnp.dtype(v.dtype))

    inputs = input_specs(graph, {"int64": "int32"})
    return ([spec(v) for v in model.trainable_variables], [spec(v) for v in model.non_trainable_variables], inputs)


def _export(model, graph, platforms):
    import jax

    trainable, non_trainable, inputs = _specs(model, graph)
    with jax.default_matmul_precision("highest"):
        return jax.export.export(jax.jit(stateless_fn(model)), platforms=platforms)(trainable, non_trainable, *inputs)


def prove_tpu_lowering(model, graph) -> dict:
    """Lower ``model`` for TPU; returns {"verdict": "ok"|"problems"|"failed", "problems", "ops", ...}."""

    step(0, 2, "jax.export for platform tpu")
    try:
        exported = _export(model, graph, ("tpu",))
    except Exception as exc:  # lowering failures are the finding, reported not raised
        return {"verdict": "failed", "platform": "tpu", "problems": [f"{type(exc).__name__}: {str(exc)[:300]}"],
                "ops": {}}
    free = sorted(graph.meta.get("free", {}).get("dims", {}))
    step(1, 2, "scanning the StableHLO")
    scan = scan_stablehlo(exported.mlir_module(), free=bool(free))
    return {"verdict": "problems" if scan["problems"] else "ok", "platform": "tpu",
            "matmul_precision": "highest", "symbolic": free, **scan}


def export_artifact(model, graph, path) -> dict:
    """Serialize the model for platforms tpu and cpu to ``path``; weights go beside it as ``.npz``.

    The program takes (trainable weights, non-trainable weights, *inputs); the npz holds them
    as ``trainable_0000..`` and ``non_trainable_0000..`` so the artifact loads with JAX and NumPy
    alone (docs/tpu.md).
    """
    import numpy as np

    exported = _export(model, graph, ("tpu", "cpu"))
    data = exported.serialize()
    with open(path, "wb") as f:
        f.write(data)
    weights = {f"trainable_{i:04d}": np.asarray(v) for i, v in enumerate(model.trainable_variables)}
    weights.update({f"non_trainable_{i:04d}": np.asarray(v) for i, v in enumerate(model.non_trainable_variables)})
    weights_path = str(path) + ".weights.npz"
    np.savez(weights_path, **weights)
    return {"path": str(path), "weights": weights_path, "bytes": len(data), "platforms": list(exported.platforms)}
