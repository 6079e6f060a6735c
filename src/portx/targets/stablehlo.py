"""What a TPU rejects or handles badly in a StableHLO module: the scan both targets' TPU proofs share.

Example:
    >>> scan_stablehlo(exported.mlir_module())["problems"]
    []
"""
from __future__ import annotations

import re
from collections import Counter

__all__ = ["scan_stablehlo"]

# custom_call targets that XLA:TPU provides (sharding annotations and TPU-native kernels).
_TPU_CUSTOM_CALLS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "tpu_custom_call",
                     "annotate_device_placement"}
_HOST_CALL = re.compile(r"callback|host|py_func", re.IGNORECASE)


def scan_stablehlo(text: str) -> dict:
    """Problems a TPU would have with a StableHLO module, and its op inventory."""
    problems = []
    if re.search(r"[x<\s(]f64\b", text):
        problems.append("float64 values (TPUs have no float64 hardware)")
    if re.search(r"complex<f64>", text):
        problems.append("complex128 values (unsupported on TPU)")
    if re.search(r"tensor<[^>]*\?", text):
        problems.append("dynamic dimensions (TPUs need static shapes)")
    calls = Counter(re.findall(r"custom_call\s*@([\w.]+)", text))
    for target in calls:
        if _HOST_CALL.search(target):
            problems.append(f"host callback custom_call @{target} (a host round trip on every call)")
        elif target not in _TPU_CUSTOM_CALLS:
            problems.append(f"custom_call @{target} is not known to exist on TPU")
    ops = Counter(re.findall(r"\b(?:stablehlo|chlo)\.([a-z_]+)", text))
    ops.pop("return", None)
    return {"problems": problems, "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])),
            "custom_calls": dict(calls)}
