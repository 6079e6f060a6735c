"""JAX frontend: a ClosedJaxpr (``jax.make_jaxpr``) -> IR; subclassed Keras models are traced into one.

Note [jaxpr lowering]: the walk visits each equation once, in order. Call-like primitives (jit,
custom_jvp_call, custom_vjp_call, closed_call, checkpoint, and ``cond`` on a constant index) are
inlined with the caller's scope prepended; ``scan``, ``while`` and ``cond`` on a run-time index are
unrolled or selected (Note [jaxpr control flow] in jaxpr_control.py). An equation whose inputs are
all known at conversion time (weights, consts, literals, iota) is evaluated with JAX itself and its result becomes a
stored constant, so constant semantics are JAX's by construction; weights are such constants, so
a batch norm's ``rsqrt(var + eps) * gamma`` becomes one stored array. Large broadcasts of small
constants are the exception: they stay ``expand`` nodes instead of filling the weights file. Every
other equation goes to its import rule, ``IMPORT_RULES["jax"][primitive name]`` (rules live next to
their op in ``ops/<family>_jax.py``); each rule gets a ``JaxCall``.

Note [jaxpr scopes]: Keras on JAX opens ``jax.named_scope(layer.name)`` around every layer call
(keras/src/backend/jax/core.py ``name_scope``), so ``eqn.source_info.name_stack`` reads
``block/dense_1``; transform markers (``vmap()``, ``jvp(...)``) and einsum specs are dropped and
the rest is joined with dots. Plain JAX functions without named scopes get an empty scope, and
messages fall back to the primitive name.

Example:
    >>> closed = jax.make_jaxpr(f)(w, x)
    >>> graph = lower_jaxpr(closed, ["x"], {"fc.kernel": w})
"""
from __future__ import annotations

import re

import jax
import numpy as np
from jax.extend import core as jcore

from ...errors import BadInput, Unsupported, UnsupportedOps
from ...ir import DTYPES, IMPORT_RULES, Graph, GraphBuilder, TensorType, Value
from ...ir.builder import holds_trainable
from ...ir.types import FLOAT8
from ...ir.validate import IRError
from ...progress import counted
from ... import ops  # noqa: F401  (registers every family's import rules)
from ...ops.elementwise import CAST
from ..call import ImportCall
from .control import CONTROL_PRIMITIVES, lower_control

__all__ = ["lower_jaxpr", "inline_jaxpr", "prune_graph", "JaxCall", "Const", "scope_of", "tensor_type"]

_INLINE = {"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr",
           "checkpoint", "remat", "remat2", "named_call"}
_SUB_KEYS = ("jaxpr", "call_jaxpr", "fun_jaxpr")
_LAYOUT = {"reshape", "transpose", "convert_element_type", "broadcast_in_dim", "squeeze", "copy", "copy_p", "rev"}
_BIG_BROADCAST = 4096  # elements; larger broadcasts of constants stay expand nodes (Note [jaxpr lowering])
_SCOPE_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# Why a primitive without a rule stays unsupported, where there is more to say than "no rule".
_REASONS = {"sort": "sorting has no IR op", "top_k": "top-k has no IR op", "erf_inv": "erf_inv has no IR op",
            "rng_bit_generator": "random numbers (training-time ops such as dropout)",
            "random_bits": "random numbers (training-time ops such as dropout)"}


def scope_of(name_stack) -> str:
    """Dotted layer path from a JAX name stack (Note [jaxpr scopes]): ``"mha/vmap()/query"`` -> ``"mha.query"``."""
    parts = [p for p in str(name_stack).split("/") if _SCOPE_PART.match(p)]
    return ".".join(parts)


def _equation_name(eqn) -> str:
    """What the progress display shows for an equation: its layer path and primitive."""
    return f"{scope_of(eqn.source_info.name_stack) or '<top>'} ({eqn.primitive.name})"


def tensor_type(aval) -> TensorType:
    """The IR type of an abstract value; Unsupported for dtypes the IR has no name for (keys, uint32)."""
    dtype = str(aval.dtype)
    if dtype not in DTYPES:
        hint = f"; the float8 formats the IR holds are {', '.join(FLOAT8)}" if "float8" in dtype else ""
        raise Unsupported(f"dtype {dtype} has no IR type{hint}")
    return TensorType(tuple(int(d) for d in aval.shape), dtype)


class Const:
    """A value known at conversion time: its array, the parameter name it prefers, its Value once stored, and
    whether it is (a re-arrangement of) a weight that trains in the source."""

    __slots__ = ("array", "name", "value", "trainable")

    def __init__(self, array, name="", trainable=False):
        self.array, self.name, self.value, self.trainable = np.asarray(array), name, None, trainable


def _viewed(eqn, args):
    """A transpose or reshape of one known array as NumPy's view of it (Note [lazy relayout] in ops/_jax.py:
    JAX's would be a copy of the weight); None for anything else."""
    name, params = eqn.primitive.name, eqn.params
    if len(args) != 1 or name not in ("transpose", "reshape") or (name == "reshape" and params.get("dimensions")):
        return None
    array = args[0].array
    return np.transpose(array, params["permutation"]) if name == "transpose" else array.reshape(params["new_sizes"])


class JaxCall(ImportCall):
    """What an import rule sees for one equation: typed inputs, known constants, and a way to emit nodes (Note
    [import calls] in frontends/call.py).

    ``input(i)`` is the IR Value of operand ``i`` (a constant is stored on first use); ``const_value(i)``
    is its array when known at conversion time, else None. ``params`` are the equation's parameters (``arg``
    reads them too).
    """

    def __init__(self, lowering, eqn, args, scope):
        super().__init__(lowering.builder, scope, lowering.hint(scope, eqn.primitive.name))
        self._low, self.eqn, self._args = lowering, eqn, args
        self.primitive, self.params = eqn.primitive.name, eqn.params
        self.bound = self.params

    @property
    def arity(self) -> int:
        """Number of operands."""
        return len(self._args)

    def input(self, i) -> Value:
        """Operand ``i`` as an IR Value."""
        return self._low.value_of(self._args[i])

    @property
    def inputs(self) -> list:
        """All operands as IR Values."""
        return [self.input(i) for i in range(self.arity)]

    def const_value(self, i):
        """Operand ``i``'s array when it is known at conversion time, else None."""
        arg = self._args[i]
        return arg.array if isinstance(arg, Const) else None

    def const_name(self, i) -> str:
        """The parameter name operand ``i`` would get (its weight path), or the scope."""
        arg = self._args[i]
        return arg.name if isinstance(arg, Const) and arg.name else (self.scope or self.primitive)

    def in_type(self, i) -> TensorType:
        """IR type of operand ``i`` (from JAX's abstract value)."""
        return tensor_type(self.eqn.invars[i].aval)

    def out_type(self, i=0) -> TensorType:
        """IR type JAX computed for output ``i``."""
        return tensor_type(self.eqn.outvars[i].aval)

    def const(self, array, hint="const") -> Value:
        """A new stored constant (a rearranged weight, an index table); trainable when it re-arranges a
        trainable operand (``holds_trainable``)."""
        read = [(a.array, a.trainable) for a in self._args if isinstance(a, Const)]
        return self._low.new_param(hint, np.asarray(array), holds_trainable(array, read))

    def scalar(self, number, dtype) -> Value:
        """A shared 0-d constant of ``dtype``: ``call.scalar(1, "float32")``."""
        return self._low.scalar(number, dtype)


class _Lowering:
    """Walks one ClosedJaxpr; holds the builder, collected failures and shared scalars."""

    def __init__(self, name, builder=None, keep_iota=False, hooks=None):
        self.builder, self.hooks = builder or GraphBuilder(name), dict(hooks or {})
        # inlined into a Keras walk (Note [keras composite layers]): iota stays a node (its size may be free) and
        # so does a re-arranged weight (a tied table read as is and transposed stays one parameter)
        self.keep_iota = keep_iota
        self.failures = {}  # (primitive, reason) -> scopes
        self.scalars = {}  # (dtype, bytes) -> Value
        self.record = None  # [(eqn, results)] in walk order, when asked (Note [jax symbols] in jax/symbols.py)

    def hint(self, scope, fallback) -> str:
        """Value-name base: the scope (``block_dense``), else the primitive name."""
        return scope.replace(".", "_") if scope else fallback

    def new_param(self, hint, array, trainable=False) -> Value:
        if str(array.dtype) not in DTYPES:
            raise Unsupported(f"a constant of dtype {array.dtype} has no IR type")
        value = self.builder.param(hint or "const", array)
        if trainable:
            self.builder.trainable.append(value.name)
        return value

    def scalar(self, number, dtype) -> Value:
        array = np.asarray(number, dtype=dtype)
        key = (str(array.dtype), array.tobytes())
        if key not in self.scalars:
            self.scalars[key] = self.new_param("scalar", array)
        return self.scalars[key]

    def value_of(self, arg) -> Value:
        """The IR Value of a bound operand, storing a constant on its first use."""
        if not isinstance(arg, Const):
            return arg
        if arg.value is None:
            arg.value = (self.scalar(arg.array, arg.array.dtype) if arg.array.ndim == 0 and not arg.name
                         and not arg.trainable else self.new_param(arg.name, arg.array, arg.trainable))
        return arg.value

    # -- walking ------------------------------------------------------------------------
    def read(self, frame, atom):
        if hasattr(atom, "val"):  # a Literal
            return Const(np.asarray(atom.val, dtype=atom.aval.dtype))
        return frame[atom]

    def walk(self, jaxpr, frame, scope, top=False):
        for eqn in counted(jaxpr.eqns, _equation_name) if top else jaxpr.eqns:  # progress.py: the display's count
            args = [self.read(frame, v) for v in eqn.invars]
            inner = scope_of(eqn.source_info.name_stack)
            here = ".".join(p for p in (scope, inner) if p)
            results = self.equation(eqn, args, here)
            if self.record is not None:
                self.record.append((eqn, results))
            for var, result in zip(eqn.outvars, results):
                if not isinstance(var, jcore.DropVar):
                    frame[var] = result

    def equation(self, eqn, args, scope) -> list:
        name = eqn.primitive.name
        sub = _sub_jaxpr(eqn, args)
        if sub is not None:
            return self.inline(sub, args if name != "cond" else args[1:], scope)
        if (not eqn.invars and not (self.keep_iota and name == "iota")) or (
                args and all(isinstance(a, Const) for a in args)):
            folded = self.fold(eqn, args, scope)
            if folded is not None:
                return folded
        return self.apply_rule(eqn, args, scope)

    def inline(self, closed, args, scope) -> list:
        jaxpr = getattr(closed, "jaxpr", closed)
        consts = getattr(closed, "consts", ())
        frame = {v: Const(np.asarray(c), f"{scope}.const" if scope else "const")
                 for v, c in zip(jaxpr.constvars, consts)}
        frame.update(zip(jaxpr.invars, args))
        self.walk(jaxpr, frame, scope)
        return [self.read(frame, v) for v in jaxpr.outvars]

    def fold(self, eqn, args, scope):
        """Evaluate with JAX when every operand is known (Note [jaxpr lowering]); None when it should stay."""
        name = eqn.primitive.name
        if eqn.effects or (name == "broadcast_in_dim" and _is_big_broadcast(eqn, args)):
            return None
        trains = [a for a in args if a.trainable]
        if trains and (name not in _LAYOUT or len(args) != 1 or self.keep_iota):
            return None  # arithmetic on a weight stays in the graph, so that the weight still trains
        try:
            out = _viewed(eqn, args)
            out = eqn.primitive.bind(*[a.array for a in args], **eqn.params) if out is None else out
        except Exception:  # not evaluable eagerly (needs a device or a trace); lower it instead
            return None
        outs = out if eqn.primitive.multiple_results else [out]
        named = [a.name for a in args if a.name]
        hint = named[0] if named and name in _LAYOUT else (f"{scope}.{name}" if scope else name)
        return [Const(np.asarray(o), hint, bool(trains)) for o in outs]

    def apply_rule(self, eqn, args, scope) -> list:
        name = eqn.primitive.name
        found = IMPORT_RULES.get("jax", {}).get(name)
        try:
            if name in self.hooks:  # a caller's own primitive (a Keras sublayer call, keras_traced.py)
                result = self.hooks[name](eqn, [self.value_of(a) for a in args], scope)
            elif name in CONTROL_PRIMITIVES:  # unrolled / selected; outputs may stay known (jaxpr_control.py)
                return lower_control(self, eqn, args, scope, Const)
            elif found is None:
                raise Unsupported(_REASONS.get(name, ""))
            else:
                result = found[1](JaxCall(self, eqn, self.promoted(eqn, args, scope), scope))
            return self.checked(eqn, result, scope)
        except Unsupported as exc:
            self.failures.setdefault((name, str(exc)), []).append(scope)
            return [self.stand_in(v.aval) for v in eqn.outvars]

    def promoted(self, eqn, args, scope) -> list:
        """Operands of mixed dtypes cast to ``preferred_element_type`` (an int32 input to a float32 Dense: JAX's
        dot_general converts it, an IR op would not)."""
        want = eqn.params.get("preferred_element_type")
        kinds = {str(v.aval.dtype) for v in eqn.invars}
        if want is None or len(kinds) < 2 or str(want) not in DTYPES:
            return args
        out = []
        for arg, var in zip(args, eqn.invars):
            if str(var.aval.dtype) == str(want):
                out.append(arg)
            elif isinstance(arg, Const):
                out.append(Const(arg.array.astype(str(want)), arg.name, arg.trainable))
            else:
                out.append(self.builder.emit(CAST, [arg], {"dtype": str(want)}, scope,
                                             self.hint(scope, eqn.primitive.name)))
        return out

    def checked(self, eqn, result, scope) -> list:
        """Rule outputs against JAX's types: a dtype difference is cast away, a shape difference is a bug."""
        got = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(got) != len(eqn.outvars):
            raise IRError(f"node {scope or eqn.primitive.name} ({eqn.primitive.name}): import rule gave "
                          f"{len(got)} outputs, JAX has {len(eqn.outvars)}")
        out = []
        for value, var in zip(got, eqn.outvars):
            want = tensor_type(var.aval)
            if value.type.shape != want.shape:
                raise IRError(f"node {scope or eqn.primitive.name} ({eqn.primitive.name}): import rule gave "
                              f"{value.type}, JAX computed {want}")
            if value.type.dtype != want.dtype:
                value = self.builder.emit(CAST, [value], {"dtype": want.dtype}, scope,
                                          self.hint(scope, eqn.primitive.name))
            out.append(value)
        return out

    def stand_in(self, aval) -> Value:
        """A typed placeholder so the walk goes on and every failure is collected."""
        try:
            type_ = tensor_type(aval)
        except Unsupported:
            type_ = TensorType(tuple(aval.shape), "float32")
        return Value(self.builder.fresh("unsupported"), type_)


def _sub_jaxpr(eqn, args):
    """The jaxpr to inline for a call-like equation (or ``cond`` on a known index), else None."""
    name = eqn.primitive.name
    if name == "cond" and args and isinstance(args[0], Const):
        return eqn.params["branches"][int(args[0].array)]
    if name not in _INLINE:
        return None
    for key in _SUB_KEYS:
        sub = eqn.params.get(key)
        if sub is not None and (hasattr(sub, "eqns") or hasattr(sub, "jaxpr")):
            return sub
    return None


def _is_big_broadcast(eqn, args) -> bool:
    size = int(np.prod(eqn.params["shape"]))
    return size > _BIG_BROADCAST and size > args[0].array.size


def prune_graph(graph: Graph) -> Graph:
    """Drop nodes no output depends on and parameters nothing reads."""
    live, kept = set(graph.outputs), []
    for node in reversed(graph.nodes):
        if any(v in live for v in node.outputs):
            kept.append(node)
            live.update(v for v in node.inputs if v is not None)
    names = {v.name for v in live}
    return graph.replace(nodes=tuple(reversed(kept)), params={k: a for k, a in graph.params.items() if k in names},
                         param_values={k: v for k, v in graph.param_values.items() if k in names})


def _pairs(param_arrays) -> list:
    items = param_arrays.items() if hasattr(param_arrays, "items") else param_arrays
    return [(str(n), np.asarray(a)) for n, a in items]


def inline_jaxpr(builder, closed_jaxpr, args, scope="", hooks=None) -> tuple:
    """Lower ``closed_jaxpr`` into ``builder`` (another frontend's graph), its invars bound to ``args``
    (IR Values, or ``Const`` for weights: a Const whose ``value`` is set is that stored Value again).

    Returns ``(outputs, failures)``: the output Values, and ``{(primitive, reason): scopes}`` for equations
    without a rule (the caller collects them with its own). Scopes are prefixed with ``scope``. ``iota`` and
    re-arrangements of trainable weights stay nodes here, where ``lower_jaxpr`` folds them. ``hooks`` maps the
    caller's own primitives to ``fn(eqn, input Values, scope) -> output Values`` (Unsupported: a failure).
    Example: ``outs, failures = inline_jaxpr(builder, jax.make_jaxpr(f)(w, x), [Const(w, "fc.w"), x_value], "fc")``.
    """
    low = _Lowering(builder.name, builder, keep_iota=True, hooks=hooks)
    with jax.default_device(jax.devices("cpu")[0]):
        outs = low.inline(closed_jaxpr, list(args), scope)
    if low.failures:
        return [], low.failures
    return [low.value_of(v) for v in outs], {}


def lower_jaxpr(closed_jaxpr, input_names, param_arrays, name="model", trainable=(), record=None) -> Graph:
    """Lower a ClosedJaxpr whose invars are ``[*params, *inputs]`` to an IR Graph.

    ``param_arrays`` maps weight names (``"dense_1.kernel"``) to arrays, in invar order (a dict or
    a list of pairs); the remaining invars become graph inputs named by ``input_names``. Raises
    UnsupportedOps listing every primitive without a rule, with counts and scopes. ``trainable`` names
    the weights that train in the source (``meta["trainable"]``); ``record``, a list, gets each equation walked.
    Example: ``lower_jaxpr(jax.make_jaxpr(f)(w, x), ["x"], {"w": w})``.
    """
    jaxpr, params = closed_jaxpr.jaxpr, _pairs(param_arrays)
    if len(params) + len(input_names) != len(jaxpr.invars):
        raise BadInput(f"jaxpr {name}: {len(jaxpr.invars)} inputs, but {len(params)} params and "
                       f"{len(input_names)} input names were given", hint="pass one name per non-weight input")
    low = _Lowering(name)
    low.record = record
    frame = {v: Const(np.asarray(c), "const") for v, c in zip(jaxpr.constvars, closed_jaxpr.consts)}
    trainable = set(trainable)
    frame.update({v: Const(a, n, n in trainable) for v, (n, a) in zip(jaxpr.invars, params)})
    for var, input_name in zip(jaxpr.invars[len(params):], input_names):
        try:
            frame[var] = low.builder.input(input_name, tensor_type(var.aval))
        except Unsupported as exc:
            raise BadInput(f"input {input_name}: {exc}", hint="pass float, integer or bool arrays") from None
    with jax.default_device(jax.devices("cpu")[0]):
        low.walk(jaxpr, frame, "", top=True)
    if low.failures:
        raise UnsupportedOps([(op, scopes, reason) for (op, reason), scopes in low.failures.items()], name)
    outputs = [low.value_of(low.read(frame, v)) for v in jaxpr.outvars]
    return prune_graph(low.builder.finish(outputs))
