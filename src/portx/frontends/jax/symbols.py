"""Free dims of a source lowered through a jaxpr, read from JAX's own symbolic shapes (Note [jax symbols]).

Note [jax symbols]: a source lowered through a jaxpr (a subclassed Keras model, frontends/keras/subclassed.py) is
traced and lowered once at the example's sizes, as the walk needs (it folds every equation whose inputs are known
by running JAX on it, and its rules read ``int`` sizes). Its free dims come from a second *trace*, not a second
lowering: the same function traced again with the candidate axes as one ``jax.export.symbolic_shape`` symbol
(``jax.ShapeDtypeStruct``s, which ``jax.make_jaxpr`` takes), whose equations are matched to the static trace's one
by one, sub-jaxprs included (``match_jaxprs``): the same primitive, the same number of operands and results, and
every symbolic dim at the example's size equal to the static one. Each var's aval then holds its shape as a dim
expression (``d``, ``2*d``, ``floordiv(d - 2, 2) + 1``), as torch's ``meta["val"]`` does (Note [symbols read
directly] in frontends/torch/symbols.py), and ``JaxSymbols.hints`` evaluates them at a second size into the same
``{"shapes", "literals", "fixed"}`` that ``rebatch(..., hints)`` (passes/static_batch.py) reads: the shape of
every IR value an equation became (the lowering's ``record``; stored constants included), each size literal of
an equation's params or shapes at the example's size with its value there, and the stored constants folded from
a size whose shape does not move (``fixed``: their value there is unknown; the caller lowers again). A size read
as a value (``dim_as_value``: ``x.shape[1] ** -0.5``) is a symbolic-only equation; it is skipped in the matching
and what is computed from it is ``sized``. What a floor divides the symbol by (a pool by 2) is read from the
expressions' ``floordiv``/``mod`` (``divisor``), as torch's ``FloorDiv`` is (Note [divided dims] in
session/dims/find.py). Report: ``found_by`` "symbolic export", as for torch.

Note [scaled symbols]: JAX decides ``d == 2 * floordiv(d, 2)`` as False (it cannot prove it), so a U-Net that pools
an image axis by 2 and concatenates the upsampled map with its skip does not trace with that axis as ``d``, where
torch adds the guard ``Mod(s0, 2) == 0`` instead. An axis that is not the batch is therefore traced again as
``2*d + r``, ``4*d + r``, ... (``r`` the example's size mod the scale) until a trace matches; the scale is then its
divisor, and the axis stays free at the example's size plus multiples of it, as torch's divided dims do.

Where JAX cannot trace the model symbolically (a Python ``int(x.shape[0])``, a branch on a size that the symbol
cannot decide, a ``jnp`` op that refuses symbolic dims) or the two traces differ (JAX takes another path at a
static size: a Python branch on ``x.shape[0] != x.shape[1]``, a ``jnp`` function with a fast path for static
shapes), the source is lowered again at a second size ("two lowerings"), and a warning says why in one line.
Indexing, a ``slice`` at static sizes but a ``gather`` with symbols, is paired by its result instead (Note
[indexing with symbols]).

Example:
    >>> specs = symbolic_specs([x], [(0, 0)])           # x: float32[2, 8] -> ShapeDtypeStruct((d, 8))
    >>> found = read_symbols(static, jax.make_jaxpr(f)(*specs), record, [(x_value, specs[0].shape)], 2)
    >>> found.hints(3)["shapes"]["x"]
    (3, 8)
"""
from __future__ import annotations

import math

import jax
import numpy as np
from jax.extend import core as jcore

from . import Const, scope_of

__all__ = ["SYMBOL", "Mismatch", "symbolic_specs", "match_jaxprs", "compact", "read_symbols", "JaxSymbols"]

#: the one symbol of a symbolic trace
SYMBOL = "d"


class Mismatch(Exception):
    """The symbolic trace's equations are not the static trace's (the message says where)."""


def _is_symbolic(dim) -> bool:
    return not isinstance(dim, (int, np.integer)) and hasattr(dim, "_evaluate")


def _evaluated(dim, size) -> int:
    """A dim (an int or a symbolic expression over SYMBOL) at SYMBOL = ``size``."""
    return int(dim._evaluate({SYMBOL: size})) if _is_symbolic(dim) else int(dim)


def symbolic_specs(arrays, sites, scale=1) -> list:
    """``arrays`` as ``jax.ShapeDtypeStruct``s whose axes ``sites`` ((input, axis) pairs) are the symbol SYMBOL, or
    ``scale * d + r`` with ``r`` the example's size mod ``scale`` (Note [scaled symbols]).

    Example: ``symbolic_specs([np.zeros((2, 8))], [(0, 0)])[0].shape`` -> ``(d, 8)``."""
    sites, symbol = {tuple(site) for site in sites}, jax.export.symbolic_shape(SYMBOL)[0]  # one scope for all
    specs = []
    for k, a in enumerate(arrays):
        shape = [scale * symbol + n % scale if (k, axis) in sites else n
                 for axis, n in enumerate(a.shape)]
        specs.append(jax.ShapeDtypeStruct(tuple(shape), a.dtype))
    return specs


def _subs(eqn) -> list:
    """The sub-jaxprs of an equation (a call's body, cond's branches, a loop's body), in a fixed order."""
    out = []
    for key in sorted(eqn.params):
        value = eqn.params[key]
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, jcore.ClosedJaxpr):
                out.append(item.jaxpr)
            elif isinstance(item, jcore.Jaxpr):
                out.append(item)
    return out


def _where(eqn) -> str:
    return f"{scope_of(eqn.source_info.name_stack) or '<top>'} ({eqn.primitive.name})"


def _vars(atoms) -> list:
    return [v for v in atoms if isinstance(v, jcore.Var)]


def match_jaxprs(static, symbolic, at=None) -> tuple:
    """``({id(static equation): symbolic equation or None}, sized)``: the two traces' equations paired one by one,
    and the symbolic vars computed from a size read as a value (Note [jax symbols]); Mismatch says where they
    differ. With ``at`` (SYMBOL's value at the example's sizes), an indexing run that JAX writes as a ``slice`` at
    static sizes and as a ``gather`` with symbols is paired by its result (Note [indexing with symbols]); its
    static steps before the result pair with None."""
    pairs, sized = {}, {}
    _match(static.jaxpr, symbolic.jaxpr, pairs, sized, at)
    return pairs, sized


def _same(ea, eb) -> bool:
    return ea.primitive.name == eb.primitive.name and len(ea.invars) == len(eb.invars) and \
        len(ea.outvars) == len(eb.outvars)


def _match(a, b, pairs, sized, at):
    eqns = []
    for eqn in b.eqns:
        if eqn.primitive.name == "dim_as_value":  # a size read as a value: no equation at static sizes
            sized[eqn.outvars[0]] = eqn.params["dim"]
        else:
            eqns.append(eqn)
    i = j = 0
    while i < len(a.eqns) and j < len(eqns):
        if not _same(a.eqns[i], eqns[j]):
            i, j = _indexing_run(a.eqns, eqns, i, j, pairs, at)
        _pair(a.eqns[i], eqns[j], pairs, sized, at)
        i, j = i + 1, j + 1
    if i < len(a.eqns) or j < len(eqns):
        first = a.eqns[i] if i < len(a.eqns) else eqns[j]
        raise Mismatch(f"{len(a.eqns)} equations at static sizes, {len(eqns)} with symbols, from {_where(first)} on")


def _pair(ea, eb, pairs, sized, at):
    known = pairs.setdefault(id(ea), eb)  # a sub-jaxpr called twice is one static object
    if known is not eb and (known is None or [str(v.aval) for v in known.outvars] != [str(v.aval) for v in eb.outvars]):
        raise Mismatch(f"equation {_where(ea)} is shared at static sizes but not with symbols")
    subs_a, subs_b = _subs(ea), _subs(eb)
    if len(subs_a) != len(subs_b):
        raise Mismatch(f"equation {_where(ea)} has {len(subs_b)} sub-jaxprs with symbols, not {len(subs_a)}")
    for sa, sb in zip(subs_a, subs_b):
        for inner, outer in zip(reversed(sb.invars), reversed(eb.invars)):  # operands map onto the last invars
            if isinstance(outer, jcore.Var) and outer in sized:
                sized[inner] = True
        _match(sa, sb, pairs, sized, at)
    if any(v in sized for v in _vars(eb.invars)) or any(v in sized for s in subs_b for v in _vars(s.outvars)) \
            or any(_is_symbolic(d) for v in eb.invars for d in getattr(v.aval, "shape", ())) \
            or _has_symbol(eb.params):
        sized.update((v, True) for v in eb.outvars)


# Note [indexing with symbols]: ``x[:, 0]`` is ``slice`` then ``squeeze`` at static sizes, but with a symbolic dim
# JAX's indexing refuses a static slice ("mode='slice' is not valid for polymorphic shapes", jax/_src/numpy/
# indexing.py ``to_static_slice``) and builds index arrays and a ``gather`` instead. Where the equations differ,
# a run of at most ``_RUN`` static indexing steps is paired with a run of at most ``_RUN * 4`` symbolic index and
# gather steps that ends in a value of the same shape and dtype at the example's sizes; the steps inside the run
# get no symbolic shapes (the ops' rules give them, ``rebatch``), and the checks at other sizes catch a wrong pair.
_RUN = 3
_STATIC_INDEXING = {"slice", "squeeze", "reshape", "rev", "expand_dims", "broadcast_in_dim"}
_SYMBOLIC_INDEXING = _STATIC_INDEXING | {"gather", "dynamic_slice", "iota", "concatenate", "convert_element_type",
                                         "lt", "ge", "add", "sub", "mul", "select_n", "clamp"}


def _indexing_run(static, symbolic, i, j, pairs, at) -> tuple:
    """(k, l): where the indexing run from static equation ``i`` and symbolic equation ``j`` ends with one value
    (Note [indexing with symbols]); Mismatch where there is none."""
    for k in range(i, min(i + _RUN, len(static)) if at is not None else ()):
        if static[k].primitive.name not in _STATIC_INDEXING or len(static[k].outvars) != 1:
            break
        want = static[k].outvars[0].aval
        for l in range(j, min(j + 4 * _RUN, len(symbolic))):
            if symbolic[l].primitive.name not in _SYMBOLIC_INDEXING or len(symbolic[l].outvars) != 1:
                break
            got = symbolic[l].outvars[0].aval
            if got.dtype == want.dtype and tuple(_evaluated(d, at) for d in got.shape) == tuple(want.shape):
                pairs.update((id(e), None) for e in static[i:k])
                return k, l
    raise Mismatch(f"equation {_where(static[i])} is {symbolic[j].primitive.name} with symbols")


def _has_symbol(params) -> bool:
    def walk(x):
        return _is_symbolic(x) or isinstance(x, (tuple, list)) and any(walk(y) for y in x)
    return any(walk(v) for v in params.values())


def compact(record) -> list:
    """The lowering's record ([(equation, results)]) without the folded arrays, which it would keep alive:
    [(equation, [IR Value, or None for a constant never stored], [folded at static sizes?])]."""
    return [(eqn, [r.value if isinstance(r, Const) else r for r in results], [isinstance(r, Const) for r in results])
            for eqn, results in record]


def read_symbols(static, symbolic, record, inputs, size, scale=1) -> "JaxSymbols":
    """The symbols of ``symbolic`` (the source traced with SYMBOL, its axes ``scale * d + r``), matched to
    ``static`` (traced at the example's sizes, those axes at ``size``) and its lowering's ``record`` ([(equation,
    results)], ``compact``ed); ``inputs`` pairs each graph input Value with its symbolic shape. Mismatch where the
    traces differ, or a dim at ``size`` differs from the static one."""
    pairs, sized = match_jaxprs(static, symbolic, size // scale)
    missing = next((eqn for eqn, *_ in record if id(eqn) not in pairs), None)
    if missing is not None:
        raise Mismatch(f"equation {_where(missing)} was lowered but has no symbolic counterpart")
    found = JaxSymbols(record, pairs, sized, inputs, scale, size % scale)
    for eqn, *_ in record:
        for var, svar in zip(eqn.outvars, pairs[id(eqn)].outvars if pairs[id(eqn)] else ()):
            shape = tuple(_evaluated(d, size // scale) for d in getattr(svar.aval, "shape", ()))
            if shape != tuple(getattr(var.aval, "shape", ())):
                raise Mismatch(f"equation {_where(eqn)} gives {svar.aval.str_short()} with symbols, which is "
                               f"{shape} at {SYMBOL}={size}, not the static {tuple(var.aval.shape)}")
    return found


class JaxSymbols:
    """One symbolic trace matched to a static lowering: the graph at other sizes of SYMBOL, without lowering again.

    Example: ``read_symbols(static, symbolic, record, inputs, 2).hints(3)["shapes"]`` -> ``{"x": (3, 8), ...}``.
    """

    def __init__(self, record, pairs, sized, inputs, scale=1, offset=0):
        self.record, self.pairs, self.sized, self.inputs = record, pairs, sized, inputs
        self.scale, self.offset = scale, offset  # the symbolic axes are ``scale * d + offset``

    def hints(self, size) -> dict:
        """``{"shapes", "literals", "fixed"}`` with the symbolic axes at ``size`` for ``rebatch`` (Note [jax
        symbols]); None where ``size`` is not ``scale * d + offset``."""
        shapes, literals, fixed = {}, {}, set()
        if size % self.scale != self.offset:
            return None

        def read(dim, now):
            then = _evaluated(dim, size // self.scale)
            if _is_symbolic(dim):
                literals.setdefault(int(now), set()).add(then)
            return then

        for value, shape in self.inputs:
            shapes[value.name] = tuple(read(d, n) for d, n in zip(shape, value.type.shape))
        for eqn, values, folded in self.record:
            sym = self.pairs[id(eqn)]
            if sym is None:  # inside an indexing run (Note [indexing with symbols])
                continue
            for key, param in eqn.params.items():
                _param_sizes(param, sym.params.get(key), read)
            for atom, satom in zip(eqn.invars, sym.invars):  # a size read as a value, a literal at static sizes
                if hasattr(atom, "val") and np.ndim(atom.val) == 0 and isinstance(satom, jcore.Var) and \
                        _is_symbolic(self.sized.get(satom)):
                    read(self.sized[satom], int(atom.val))
            for var, svar, value, known in zip(eqn.outvars, sym.outvars, values, folded):
                shape = tuple(read(d, n) for d, n in zip(getattr(svar.aval, "shape", ()), var.aval.shape))
                if value is None or not hasattr(value, "type"):
                    continue
                shapes[value.name] = shape
                if known and svar in self.sized and shape == tuple(value.type.shape):
                    fixed.add(value.name)  # folded from a size, same shape: its value there is unknown
        return {"shapes": shapes, "literals": literals, "fixed": fixed}

    def divisor(self) -> int:
        """The least common multiple of what the shapes divide SYMBOL by (``floordiv(d, 2)``: 2) and its scale; 1
        where none."""
        found = self.scale
        for eqn, *_ in self.record:
            for svar in self.pairs[id(eqn)].outvars if self.pairs[id(eqn)] else ():
                for dim in getattr(svar.aval, "shape", ()):
                    for by in _divisors(dim) if _is_symbolic(dim) else ():
                        found = math.lcm(found, by)
        return found


def _param_sizes(static, symbolic, read):
    """Each int of an equation's params that is a symbolic expression in the symbolic trace, through ``read``."""
    if _is_symbolic(symbolic) and isinstance(static, (int, np.integer)) and not isinstance(static, bool):
        read(symbolic, static)
    elif isinstance(static, (tuple, list)) and isinstance(symbolic, (tuple, list)) and len(static) == len(symbolic):
        for x, y in zip(static, symbolic):
            _param_sizes(x, y, read)


def _divisors(expr) -> list:
    """The constant divisors of the ``floordiv``/``mod`` factors of a symbolic dim over SYMBOL, nested ones
    included."""
    out = []
    for term, _ in expr._sorted_terms:
        for factor, _ in getattr(term, "_factors", ()):
            if factor.operation in ("floordiv", "mod") and len(factor.operands) == 2:
                base, by = factor.operands
                if not _is_symbolic(by) or by._is_constant:
                    by = _evaluated(by, 0) if _is_symbolic(by) else int(by)
                    if by > 1 and _is_symbolic(base) and SYMBOL in base._get_vars():
                        out.append(by)
            out += [d for operand in factor.operands if _is_symbolic(operand) for d in _divisors(operand)]
    return out
