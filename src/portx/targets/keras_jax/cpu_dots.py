"""Running a bfloat16 model's matrix products on the CPU at the speed of its float32 ones.

Note [bfloat16 dots on the CPU]: XLA's CPU backend computes a bfloat16 ``dot`` at the cost of converting both
operands, the weight included, to float32 at every call and multiplying those: on this 2-core machine (CPU time,
jax 0.10) a (16, 4096) x (4096, 14336) bfloat16 product took 225 ms, the same product with both operands widened
inside the jitted function 198 ms, a float32 one 83 ms, and the bfloat16 product asked for a float32 result
(``preferred_element_type``) 44 ms; torch's bfloat16 matmul 25 ms. An 8B decoder's verification spent much
of its time there. A TPU computes a bfloat16 product as the last form does (bfloat16 operands, float32
accumulation, the result rounded to bfloat16), and so does torch on the CPU. ``widened_dots`` evaluates a
function's jaxpr with every ``dot_general`` whose operands and result are bfloat16 (or float16) asked for a float32
result and rounded back to the narrow dtype: outputs agree with the plain run to about the narrow dtype's last bit
(a few values differ by one unit), and on the 8B folder the logits came out equal to torch's. A function whose
arguments hold no narrow floats is called as it is (no second trace).

Example:
    >>> run = jax.jit(widened_dots(forward))  # forward(trainable, non_trainable, *inputs)
"""
from __future__ import annotations

__all__ = ["widened_dots", "NARROW"]

#: the float dtypes whose dots are widened
NARROW = ("bfloat16", "float16")


def widened_dots(fn):
    """``fn`` (traced, e.g. under ``jax.jit``) with its narrow-float dots computed with a float32 result and rounded
    back (Note [bfloat16 dots on the CPU]); called as it is when no argument is a narrow float."""
    import jax

    def run(*args):
        flat, tree = jax.tree_util.tree_flatten(args)
        if not any(getattr(getattr(a, "dtype", None), "name", None) in NARROW for a in flat):
            return fn(*args)
        closed, shape = jax.make_jaxpr(lambda *leaves: fn(*jax.tree_util.tree_unflatten(tree, leaves)),
                                       return_shape=True)(*flat)
        out = _evaluate(closed.jaxpr, closed.consts, flat)
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), out)

    return run


def _evaluate(jaxpr, consts, args) -> list:
    """``jax.core.eval_jaxpr`` with ``_bind``'s rewrite of each equation, nested jits inlined."""
    from jax.extend.core import Literal

    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for eqn in jaxpr.eqns:
        outs = _bind(eqn, [read(v) for v in eqn.invars])
        env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    return [read(v) for v in jaxpr.outvars]


def _bind(eqn, values):
    import jax.numpy as jnp
    from jax import lax

    primitive, params = eqn.primitive, eqn.params
    if primitive is lax.dot_general_p and all(v.dtype.name in NARROW for v in values) and \
            jnp.dtype(params.get("preferred_element_type") or values[0].dtype).name in NARROW:
        narrow = jnp.dtype(params.get("preferred_element_type") or values[0].dtype)
        return primitive.bind(*values, **{**params, "preferred_element_type": jnp.dtype("float32")}).astype(narrow)
    if primitive.name in ("pjit", "jit"):  # a nested jit: its dots too
        return _evaluate(params["jaxpr"].jaxpr, params["jaxpr"].consts, values)
    bind_params = primitive.get_bind_params(params)
    if isinstance(bind_params, tuple):  # JAX before 0.5: (subfuns, params)
        subfuns, bind_params = bind_params
        return primitive.bind(*subfuns, *values, **bind_params)
    return primitive.bind(*values, **bind_params)
