"""Running a bfloat16 model's matrix products on the CPU at the speed of its float32 ones.

Note [bfloat16 dots on the CPU]: XLA's CPU backend has no bfloat16 matrix product; it widens a bfloat16 ``dot``
to float32 by converting both operands, the weight included, into new float32 buffers at every call, then rounds
the float32 result to bfloat16. For the small batches verification runs, that conversion is the product's cost:
a (16, 4096) x (4096, 14336) product took 225 ms of CPU time where the same product asked for a float32 result
(``preferred_element_type``, which XLA's CPU kernels take from bfloat16 operands directly) took 44 ms, and a
float32 one 83 ms; an 8B decoder's 32 blocks spent most of their verification there. A TPU computes the same
thing natively (bfloat16 operands, float32 accumulation, the result rounded to bfloat16), and so does torch's
bfloat16 ``linear`` on the CPU. ``widened_dots`` evaluates a function's jaxpr with every ``dot_general`` whose
operands and result are bfloat16 (or float16) asked for a float32 result and rounded back to the narrow dtype:
the same arithmetic in another order of XLA's own passes, so the outputs agree with the plain run to the narrow
dtype's last bit or so (a few differ by one unit), well inside its tolerance. A function whose arguments hold no
narrow floats is called as it is (no second trace).

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
