"""JAX control flow (``scan``, ``while``, ``cond``) lowered by unrolling and selecting; see jaxpr.py.

Note [jaxpr control flow]: the IR has no loops or branches, so a loop becomes its body lowered once per
step and a branch becomes every branch lowered with the result picked by ``where``.

- ``scan`` (``lax.scan``, ``fori_loop`` with constant bounds, ``keras.ops.map``, recurrent layers): the body
  runs ``length`` times, carries threaded, ``xs[i]`` taken with ``select`` and the per-step ``ys`` stacked
  on a new leading axis; ``reverse`` walks the indices backwards (ys keep their index positions);
  ``unroll`` only tunes XLA's loop and is irrelevant once the loop is fully unrolled.
- ``while``: the condition is lowered before each step. The walk folds equations on known values, so a
  counter with a constant start, step and bound (``fori_loop`` lowered to ``while``) gives a known
  predicate and the loop unrolls. A predicate computed from tensor values (``gcd``, a convergence loop)
  has no static trip count: refused with NotTpuLegal (exit 4), naming the loop and the static rewrite.
- ``cond`` (``lax.cond``, ``lax.switch``) with an index known only at run time: every branch is lowered
  (jaxpr branches are pure) and ``where(index == k, branch_k, ...)``; an index outside ``[0, n)`` takes
  the last branch, as XLA's conditional does. A constant index is inlined by jaxpr.py before this.

Unrolling is bounded: more than ``MAX_UNROLLED_EQUATIONS`` body equations times steps is refused (exit 3)
instead of growing the graph without limit.

Example:
    >>> jax.make_jaxpr(lambda x: lax.fori_loop(0, 3, lambda i, a: a * 0.5, x))(x)   # scan, length 3
    >>> # lowers to three ``mul`` nodes; the int32 counter folds away
"""
from __future__ import annotations

import numpy as np

from ...errors import NotTpuLegal, Unsupported
from ...ops.elementwise import BINARY, WHERE
from ...ops.shape import STACK
from ...ops.shape.index import SELECT

__all__ = ["CONTROL_PRIMITIVES", "MAX_UNROLLED_EQUATIONS", "lower_control", "count_equations"]

#: the most equations an unrolled loop may add (body equations, nested loops counted per step, times steps)
MAX_UNROLLED_EQUATIONS = 4096
CONTROL_PRIMITIVES = ("scan", "while", "cond")


def count_equations(closed) -> int:
    """Equations of a (Closed)Jaxpr, sub-jaxprs included; a nested scan counts its body once per step."""
    jaxpr = getattr(closed, "jaxpr", closed)
    total = 0
    for eqn in jaxpr.eqns:
        inner = sum(count_equations(sub) for sub in _sub_jaxprs(eqn.params))
        total += 1 + inner * int(eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1)
    return total


def _sub_jaxprs(params):
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if hasattr(item, "eqns") or hasattr(getattr(item, "jaxpr", None), "eqns"):
                yield item


def lower_control(low, eqn, args, scope, const_type) -> list:
    """Lower one ``scan`` / ``while`` / ``cond`` equation with ``low`` (a jaxpr.py lowering); ``args`` are
    bound operands (Values or ``const_type`` instances). Returns the outputs, known ones kept as constants."""
    name = eqn.primitive.name
    if name == "scan":
        return _scan(_Body(low, eqn.params["jaxpr"], scope, const_type), eqn, args, scope)
    if name == "while":
        return _while(low, eqn, args, scope, const_type)
    return _cond(low, eqn, args, scope, const_type)


class _Body:
    """A sub-jaxpr lowered again on each call; its own constants are stored once, not once per step."""

    def __init__(self, low, closed, scope, const_type):
        self.low, self.jaxpr, self.scope, self.const_type = low, getattr(closed, "jaxpr", closed), scope, const_type
        hint = f"{scope}.const" if scope else "const"
        self.consts = {v: const_type(np.asarray(c), hint) for v, c in zip(self.jaxpr.constvars,
                                                                            getattr(closed, "consts", ()))}
        self.size = count_equations(closed)

    def __call__(self, args) -> list:
        frame = dict(self.consts)
        frame.update(zip(self.jaxpr.invars, args))
        self.low.walk(self.jaxpr, frame, self.scope)
        return [self.low.read(frame, v) for v in self.jaxpr.outvars]

    def known(self, arg) -> bool:
        return isinstance(arg, self.const_type) and not arg.trainable

    def emit(self, op, inputs, attrs, primitive):
        values = [self.low.value_of(a) for a in inputs]
        return self.low.builder.emit(op, values, attrs, self.scope, self.low.hint(self.scope, primitive))


def _check_steps(body, steps):
    if body.size * steps > MAX_UNROLLED_EQUATIONS:
        raise Unsupported(f"unrolling {steps} steps of a {body.size}-equation loop body exceeds "
                          f"MAX_UNROLLED_EQUATIONS={MAX_UNROLLED_EQUATIONS} (body equations x steps); shorten the "
                          "sequence or loop over fewer, larger steps")


def _failures(low) -> int:
    return sum(len(scopes) for scopes in low.failures.values())


def _stand_ins(low, eqn) -> list:
    """Placeholders for a loop whose body failed once: the failure is reported once, not once per step."""
    return [low.stand_in(v.aval) for v in eqn.outvars]


def _scan(body, eqn, args, scope) -> list:
    params = eqn.params
    length, n_consts, n_carry = int(params["length"]), int(params["num_consts"]), int(params["num_carry"])
    _check_steps(body, length)
    failed = _failures(body.low)
    consts, carry, xs = args[:n_consts], list(args[n_consts:n_consts + n_carry]), args[n_consts + n_carry:]
    ys_at = {}
    for index in (reversed(range(length)) if params["reverse"] else range(length)):
        step_xs = [body.const_type(x.array[index]) if body.known(x) else
                   body.emit(SELECT, [x], {"axis": 0, "index": index}, "scan") for x in xs]
        out = body([*consts, *carry, *step_xs])
        if _failures(body.low) > failed:
            return _stand_ins(body.low, eqn)
        carry, ys_at[index] = out[:n_carry], out[n_carry:]
    ys = []
    for j, var in enumerate(eqn.outvars[n_carry:]):
        steps = [ys_at[i][j] for i in range(length)]
        if not steps:
            ys.append(body.const_type(np.zeros(var.aval.shape, var.aval.dtype)))
        elif all(body.known(s) for s in steps):
            ys.append(body.const_type(np.stack([s.array for s in steps]).astype(var.aval.dtype)))
        else:
            ys.append(body.emit(STACK, steps, {"axis": 0}, "scan"))
    return [*carry, *ys]


def _while(low, eqn, args, scope, const_type) -> list:
    params = eqn.params
    n_cond, n_body = int(params["cond_nconsts"]), int(params["body_nconsts"])
    cond = _Body(low, params["cond_jaxpr"], scope, const_type)
    body = _Body(low, params["body_jaxpr"], scope, const_type)
    cond_consts, body_consts, carry = args[:n_cond], args[n_cond:n_cond + n_body], list(args[n_cond + n_body:])
    steps, failed = 0, _failures(low)
    while True:
        (pred,) = cond([*cond_consts, *carry])
        if _failures(low) > failed:
            return _stand_ins(low, eqn)
        if not isinstance(pred, const_type):
            raise NotTpuLegal(f"while at {scope or '<top>'}: the loop condition depends on tensor values, so the "
                              "trip count is unknown at conversion time (data-dependent control flow; portx "
                              "unrolls loops with a static trip count)",
                              hint="use fori_loop / scan with constant bounds, or a while_loop whose condition "
                                   "reads only a counter with a constant start, step and bound")
        if not bool(pred.array):
            return carry
        steps += 1
        _check_steps(body, steps)
        carry = body([*body_consts, *carry])


def _cond(low, eqn, args, scope, const_type) -> list:
    index, operands = args[0], args[1:]
    branches = [_Body(low, branch, scope, const_type) for branch in eqn.params["branches"]]
    outs, first = [branch(operands) for branch in branches], branches[0]
    picked = low.value_of(index)
    results = []
    for j in range(len(eqn.outvars)):
        options = [out[j] for out in outs]
        if all(first.known(o) for o in options) and all(np.array_equal(o.array, options[0].array) for o in options):
            results.append(options[0])
            continue
        if picked.type.dtype == "bool":
            results.append(first.emit(WHERE, [picked, options[1], options[0]], {}, "cond"))
            continue
        result = options[-1]  # XLA: an index outside [0, n) runs the last branch
        for k in range(len(options) - 2, -1, -1):
            hit = first.emit(BINARY["eq"], [picked, low.scalar(k, picked.type.dtype)], {}, "cond")
            result = first.emit(WHERE, [hit, options[k], result], {}, "cond")
        results.append(result)
    return results
