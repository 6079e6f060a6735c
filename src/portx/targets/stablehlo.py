"""What a TPU rejects or handles badly in a StableHLO module: the scan both targets' TPU proofs share.

Example:
    >>> scan_stablehlo(exported.mlir_module())["problems"]
    []
"""
from __future__ import annotations

import re
from collections import Counter

__all__ = ["scan_stablehlo", "input_specs"]

# custom_call targets that XLA:TPU provides (sharding annotations and TPU-native kernels; the linear algebra
# ones are JAX's TPU lowerings of eigh, qr/svd and lu: jax/_src/export/_export.py, _CUSTOM_CALL_TARGETS_GUARANTEED_STABLE).
_TPU_CUSTOM_CALLS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "tpu_custom_call",
                     "annotate_device_placement", "Eigh", "Qr", "ProductOfElementaryHouseholderReflectors",
                     "LuDecomposition"}
_HOST_CALL = re.compile(r"callback|host|py_func", re.IGNORECASE)


def input_specs(graph, narrow=None) -> list:
    """jax.ShapeDtypeStructs of the graph's inputs; free dims (Note [free dims]) as jax.export symbols
    that share one scope, so one program serves every size. ``narrow``: dtype name -> the one to use."""
    import jax
    import jax.numpy as jnp

    free = graph.meta.get("free", {}).get("dims", {})
    symbols = {s: re.sub(r"\W", "_", s) if re.match(r"[A-Za-z_]", s) else f"d_{re.sub(r'[^0-9A-Za-z_]', '_', s)}"
               for s in free}
    scope = jax.export.SymbolicScope() if free else None
    specs = []
    for value in graph.inputs:
        dims = [symbols[d.symbol] if not isinstance(d, int) else str(d) for d in graph.free_shape(value)]
        shape = jax.export.symbolic_shape(", ".join(dims), scope=scope) if free and dims else value.type.shape
        dtype = (narrow or {}).get(value.type.dtype, value.type.dtype)
        specs.append(jax.ShapeDtypeStruct(tuple(shape), jnp.dtype(dtype)))
    return specs


def scan_stablehlo(text: str, free=False) -> dict:
    """Problems a TPU would have with a StableHLO module, and its op inventory. ``free``: the program was
    exported with symbolic dims on purpose (jax.export refines them to the call's static sizes, and checks
    their constraints with ``shape_assertion`` calls that refinement removes)."""
    problems = []
    if re.search(r"[x<\s(]f64\b", text):
        problems.append("float64 values (TPUs have no float64 hardware)")
    if re.search(r"complex<f64>", text):
        problems.append("complex128 values (unsupported on TPU)")
    if not free and re.search(r"tensor<[^>]*\?", text):
        problems.append("dynamic dimensions (TPUs need static shapes)")
    calls = Counter(re.findall(r"custom_call\s*@([\w.]+)", text))
    for target in calls:
        if _HOST_CALL.search(target):
            problems.append(f"host callback custom_call @{target} (a host round trip on every call)")
        elif target not in _TPU_CUSTOM_CALLS and not (free and target == "shape_assertion"):
            problems.append(f"custom_call @{target} is not known to exist on TPU")
    ops = Counter(re.findall(r"\b(?:stablehlo|chlo)\.([a-z_]+)", text))
    ops.pop("return", None)
    return {"problems": problems, "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])),
            "custom_calls": dict(calls)}
