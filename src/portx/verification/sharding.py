"""report.json ``sharding``: the emitted model split over a mesh, run and compared with one device.

The target does the work (``Target.prove_sharded``: targets/keras_jax/mesh_proof.py); this module picks the
devices, makes the inputs and records the plan's roles and any problem as report warnings.

Example:
    >>> report.sharding = sharding_report(KERAS_JAX, "out/", graph, {"batch": 2, "model": 4}, 0, report.warnings)
"""
from __future__ import annotations

from collections import Counter

from ..session.report_sections import Sharding
from .budget import over_budget
from .compare import make_inputs

__all__ = ["sharding_report", "proof_devices", "PROOF_CPU_DEVICES"]

#: CPU devices a proof may force (XLA_FLAGS=--xla_force_host_platform_device_count) where JAX has fewer
PROOF_CPU_DEVICES = 8


def proof_devices() -> int:
    """Devices a mesh may use: this process's JAX devices, or the CPU devices the proof forces."""
    import jax

    return max(jax.device_count(), PROOF_CPU_DEVICES)


def sharding_report(target, folder, graph, mesh, seed, warnings: list) -> Sharding:
    """``target.prove_sharded`` on seeded inputs, with the roles the sharding pass gave (a count per role);
    layout_map's notes and a mismatch are added to ``warnings`` (the typed report's ``warnings``). Above the weight
    budget the model is lowered sharded on abstract weights, not run (Note [abstract mesh proof] in targets/keras_jax/mesh_proof.py)."""
    roles = dict(Counter(role for role, _ in graph.meta.get("sharding", {}).get("roles", {}).values()))
    if not set(roles) - {"small"}:  # nothing splits: the proof would run the one-device program 8 times over
        return Sharding(verdict="skipped", why="no weight to split on the mesh: the model has none, or only vectors "
                        "small enough to stay whole on every device (Note [small weights])", roles=roles)
    result = target.prove_sharded(folder, graph, mesh, make_inputs(graph, seed), abstract=bool(over_budget(graph)))
    result["roles"] = roles
    warnings.extend(result.get("notes", []))
    if result.get("verdict") in ("mismatch", "failed"):
        problem = "; ".join(result.get("problems", [])) or f"largest difference {result.get('max_abs_diff')}"
        warnings.append(f"sharded run on mesh {mesh}: {result['verdict']} ({problem})")
    return Sharding.from_dict(result)  # typed where built: Note [typed sections] (session/report_sections.py)
