"""Proof of TPU lowering for an emitted PyTorch module: torchax runs it on JAX, jax.export lowers it.

PyTorch/XLA is being superseded by torchax (PyTorch on JAX), and JAX can lower for the ``tpu``
platform on a CPU-only machine. So the proof for the ``torch-xla`` target is: every ATen op the
module uses has a torchax lowering (an op without one raises, which is the finding), and the
resulting program lowers for TPU with no float64, dynamic shapes or host callbacks
(``targets/stablehlo.py``). Where ``torch_xla`` itself is installed, ``run_on_torch_xla`` runs the
module on its device and returns its outputs and the ``aten::`` CPU-fallback counters (empty is the
pass); ``benchmarks/torch_xla_check.py`` applies it to converted folders from a torch-xla venv.

Example:
    >>> proof = prove_torch_tpu_lowering(module, graph)
    >>> proof["verdict"], proof["via"]
    ('ok', 'torchax')
"""
from __future__ import annotations

import importlib.util

import numpy as np

from ...progress import step
from ..stablehlo import input_specs, scan_stablehlo

__all__ = ["prove_torch_tpu_lowering", "run_on_torch_xla"]


def _lower_with_torchax(module, graph):
    import jax
    import torchax

    if _is_abstract(module):  # Note [abstract torch proof]
        state_specs, fn = _abstract_extract(module)
    else:
        states, fn = torchax.extract_jax(module)
        state_specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), states)
    jitted = jax.jit(lambda st, *args: fn(st, args))
    with jax.default_matmul_precision("highest"):
        return jax.export.export(jitted, platforms=("tpu",))(
            state_specs, *input_specs(graph, {"int64": "int32", "float64": "float32"}))


def _is_abstract(module) -> bool:
    return any(t.is_meta for t in list(module.parameters()) + list(module.buffers()))


def _abstract_extract(module):
    """(state specs, fn) as ``torchax.extract_jax`` gives (states, fn), without its copy of every weight.

    Note [abstract torch proof]: ``torchax.extract_jax`` copies each parameter into a JAX array before anything
    is traced, so the TPU proof of a model above the weight budget (Note [weight budget]) would hold all of its
    weights again. The module is loaded on the meta device instead (``TorchXla.load_abstract``), and the program
    is lowered on ``jax.ShapeDtypeStruct`` states: ``fn`` is the function ``extract_jax`` returns, written out, so
    the weights exist only as tracers.
    """
    import jax
    import torchax
    from torchax.interop import JittableModule
    from torchax.ops.mappings import t2j_dtype

    env, jit_module = torchax.default_env(), JittableModule(module)
    states = {**jit_module.buffers, **jit_module.params}
    specs = {k: jax.ShapeDtypeStruct(tuple(t.shape), t2j_dtype(t.dtype)) for k, t in states.items()}

    def fn(values, args):
        params = {k: values[k] for k in jit_module.params}
        buffers = {k: values[k] for k in jit_module.buffers}
        params, buffers, args = env.j2t_iso((params, buffers, args))
        with env:
            return env.t2j_iso(jit_module.functional_call("forward", params, buffers, *args))

    return specs, fn


def prove_torch_tpu_lowering(module, graph) -> dict:
    """Lower ``module`` for TPU through torchax; {"verdict": "ok"|"problems"|"failed"|"skipped", ...}."""
    if importlib.util.find_spec("torchax") is None:
        return {"verdict": "skipped", "via": "torchax", "problems": [],
                "why": "torchax is not installed (a dependency of portx: pip install torchax==0.0.14.dev20261026)"}
    free, note = sorted(graph.meta.get("free", {}).get("dims", {})), None

    step(0, 2, "lowering through torchax for platform tpu")
    try:
        try:
            exported = _lower_with_torchax(module, graph)
        except Exception as exc:  # noqa: BLE001 - torchax may not trace symbolic sizes: prove the static program
            if not free:
                raise
            note = f"symbolic lowering failed ({type(exc).__name__}); proved at the example's sizes"
            free, graph = [], graph.replace(meta={k: v for k, v in graph.meta.items() if k != "free"})
            exported = _lower_with_torchax(module, graph)
    except Exception as exc:  # an op torchax cannot lower, or XLA refusing the program, is the finding
        return {"verdict": "failed", "via": "torchax", "platform": "tpu",
                "problems": [f"{type(exc).__name__}: {str(exc).strip()[:300]}"], "ops": {}}
    step(1, 2, "scanning the StableHLO")
    scan = scan_stablehlo(exported.mlir_module(), free=bool(free))
    return {"verdict": "problems" if scan["problems"] else "ok", "via": "torchax", "platform": "tpu",
            "matmul_precision": "highest", "symbolic": free, "abstract_weights": _is_abstract(module),
            **({"note": note} if note else {}), **scan}


def run_on_torch_xla(module, arrays):
    """Run ``module`` on a torch_xla device: (outputs as NumPy arrays, ``aten::`` CPU-fallback counters),
    or None without torch_xla. Empty counters are the pass. Moves ``module`` to the device.

    Example: ``outputs, fallbacks = run_on_torch_xla(load_model(), [x])``; ``fallbacks == {}``.
    """
    if importlib.util.find_spec("torch_xla") is None:
        return None
    import torch
    import torch_xla
    import torch_xla.debug.metrics as met

    device = torch_xla.device()
    model = module.to(device)
    met.clear_all()
    with torch.no_grad():
        out = model(*[torch.from_numpy(np.require(a, requirements="C")).to(device) for a in arrays])
    torch_xla.sync()
    outputs = [t.cpu().numpy() for t in (out if isinstance(out, (tuple, list)) else [out])]
    return outputs, {name: met.counter_value(name) for name in met.counter_names() if name.startswith("aten::")}
