"""Proof of TPU lowering for an emitted PyTorch module: torchax runs it on JAX, jax.export lowers it.

PyTorch/XLA is being superseded by torchax (PyTorch on JAX), and JAX can lower for the ``tpu``
platform on a CPU-only machine. So the proof for the ``torch-xla`` target is: every ATen op the
module uses has a torchax lowering (an op without one raises, which is the finding), and the
resulting program lowers for TPU with no float64, dynamic shapes or host callbacks
(``tpu.scan_stablehlo``). Where ``torch_xla`` itself is installed, ``xla_fallback_counters`` runs
the module on its device and returns the ``aten::`` CPU-fallback counters (empty is the pass).

Example:
    >>> proof = prove_torch_tpu_lowering(module, graph)
    >>> proof["verdict"], proof["via"]
    ('ok', 'torchax')
"""
from __future__ import annotations

import importlib.util

import numpy as np

from .tpu import scan_stablehlo

__all__ = ["prove_torch_tpu_lowering", "xla_fallback_counters"]


def _input_specs(graph):
    import jax
    import jax.numpy as jnp

    narrow = {"int64": "int32", "float64": "float32"}
    return [jax.ShapeDtypeStruct(tuple(v.type.shape), jnp.dtype(narrow.get(v.type.dtype, v.type.dtype)))
            for v in graph.inputs]


def _lower_with_torchax(module, graph):
    import jax
    import torchax

    states, fn = torchax.extract_jax(module)
    jitted = jax.jit(lambda st, *args: fn(st, args))
    state_specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), states)
    with jax.default_matmul_precision("highest"):
        return jax.export.export(jitted, platforms=("tpu",))(state_specs, *_input_specs(graph))


def prove_torch_tpu_lowering(module, graph) -> dict:
    """Lower ``module`` for TPU through torchax; {"verdict": "ok"|"problems"|"failed"|"skipped", ...}."""
    if importlib.util.find_spec("torchax") is None:
        return {"verdict": "skipped", "via": "torchax", "problems": [],
                "why": "torchax is not installed (pip install 'portx[test]' or torchax==0.0.14.dev20261026)"}
    try:
        exported = _lower_with_torchax(module, graph)
    except Exception as exc:  # an op torchax cannot lower, or XLA refusing the program, is the finding
        return {"verdict": "failed", "via": "torchax", "platform": "tpu",
                "problems": [f"{type(exc).__name__}: {str(exc).strip()[:300]}"], "ops": {}}
    scan = scan_stablehlo(exported.mlir_module())
    return {"verdict": "problems" if scan["problems"] else "ok", "via": "torchax", "platform": "tpu",
            "matmul_precision": "highest", **scan}


def xla_fallback_counters(module, arrays) -> dict | None:
    """Run ``module`` on a torch_xla device and return its ``aten::`` fallback counters (None without torch_xla)."""
    if importlib.util.find_spec("torch_xla") is None:
        return None
    import torch
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.metrics as met

    device = xm.xla_device()
    model = module.to(device)
    met.clear_all()
    with torch.no_grad():
        out = model(*[torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays])
    xm.mark_step()
    del out
    return {name: met.counter_value(name) for name in met.counter_names() if name.startswith("aten::")}
