"""Completeness by design: every Core ATen op and every JAX primitive the ``keras.ops`` cases reach is covered, or
listed with a reason, so a new torch or JAX version that adds an op fails here instead of a user.

Core ATen: the ``torch.ops.aten`` overload packets with an overload tagged ``torch.Tag.core`` in the installed torch.
One is covered when the torch frontend has an import rule for it (``IMPORT_RULES["torch"]``, keyed
``aten::<name>``) and every IR op the rule emits has a ``native`` or ``rewrite`` row in both op tables
(``src/portx/op_tables/{keras_jax,torch_xla}.toml``). The IR ops of a rule are its OpDef plus the OpDefs its code
names, followed into the helper functions of its module it calls (``BINARY["mul"]``: the keys it spells); a rule
naming no OpDef only refuses. Otherwise the op is in ``core_aten_refused.toml`` with its reason.

JAX primitives: each ``keras.ops`` case's function (``keras_ops_specs.SPECS``) is traced with ``jax.make_jaxpr`` on
its seeded inputs, once per session, and the primitive names are collected recursively through sub-jaxprs (jit,
custom_jvp_call, cond branches, scan/while bodies). One is covered with an import rule (``IMPORT_RULES["jax"]``)
or as control flow (``jaxpr_control.CONTROL_PRIMITIVES``); otherwise it is in ``jax_primitives_refused.toml``.

A listed op that is covered (or no longer exists / is no longer reached) is a stale row and fails too.

Example:
    >>> sorted(core_aten_ops())[:2]
    ['aten::_adaptive_avg_pool2d', 'aten::_adaptive_avg_pool2d_backward']
    >>> "relu" in {op.name for op in rule_ir_ops(IMPORT_RULES["torch"]["aten::relu"])}
    True
"""
import os
import tomllib
import types
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")

import pytest  # noqa: E402

import portx.ops  # noqa: E402,F401 - registers every import rule
from portx.frontends.jax.control import CONTROL_PRIMITIVES  # noqa: E402
from portx.ir import IMPORT_RULES, OpDef  # noqa: E402
from portx.passes.legalize import load_table  # noqa: E402

HERE = Path(__file__).parent
TARGETS = ("keras-jax", "torch-xla")
CLASSES = {"core": ("decomposed", "folded", "backward", "data-dependent", "random", "not-expressible"),
           "jax": ("inlined", "folded")}


def _listed(name) -> dict:
    return tomllib.loads((HERE / name).read_text(encoding="utf-8"))["refused"]


CORE_REFUSED = _listed("core_aten_refused.toml")
JAX_REFUSED = _listed("jax_primitives_refused.toml")


def core_aten_ops() -> set:
    """``aten::<name>`` of every ``torch.ops.aten`` overload packet with an overload tagged ``torch.Tag.core``. The
    packets come from the dispatcher's list of every registered op (``dir(torch.ops.aten)`` holds only those
    looked up so far, so it would depend on what ran before)."""
    import torch

    found = set()
    for name in sorted({n.split(".")[0] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}):
        try:
            packet = getattr(torch.ops.aten, name.removeprefix("aten::"))
        except (AttributeError, RuntimeError):
            continue
        if isinstance(packet, torch._ops.OpOverloadPacket) and any(
                torch.Tag.core in getattr(packet, overload).tags for overload in packet.overloads()):
            found.add(packet._qualified_op_name)
    return found


def _codes(fn):
    """``fn``'s code object and those nested in it (lambdas, comprehensions, inner functions)."""
    codes = [fn.__code__]
    for code in codes:
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return codes


def _named_ops(fn, seen) -> set:
    """The OpDefs ``fn`` names, and those of the functions of its own module that it names."""
    if fn in seen:
        return set()
    seen.add(fn)
    codes = _codes(fn)
    names = {n for code in codes for n in code.co_names}
    keys = {c for code in codes for c in code.co_consts if isinstance(c, str)}
    ops = set()
    for name in names:
        value = fn.__globals__.get(name)
        if isinstance(value, OpDef):
            ops.add(value)
        elif isinstance(value, dict) and value and all(isinstance(v, OpDef) for v in value.values()):
            ops.update(value[k] for k in keys if k in value)
        elif isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            ops |= _named_ops(value, seen)
    return ops


def rule_ir_ops(entry) -> set:
    """The IR ops an ``IMPORT_RULES`` entry ``(OpDef or None, rule)`` emits (see the module docstring)."""
    op, rule = entry
    return _named_ops(rule, set()) | ({op} if op is not None else set())


@pytest.fixture(scope="module")
def tables():
    return {target: load_table(target)["op"] for target in TARGETS}


def _emitted_everywhere(op, tables) -> bool:
    return all(op.name in rows and rows[op.name]["status"].split(":")[0] in ("native", "rewrite")
               for rows in tables.values())


def _core_gaps(tables) -> dict:
    """Core ATen op -> why it is not covered: no import rule, or the IR ops without both emit rows."""
    gaps = {}
    for name in sorted(core_aten_ops()):
        entry = IMPORT_RULES.get("torch", {}).get(name)
        if entry is None:
            gaps[name] = "no import rule"
            continue
        ops = rule_ir_ops(entry)
        lacking = sorted(op.name for op in ops if not _emitted_everywhere(op, tables))
        if not ops or lacking:
            gaps[name] = f"IR ops without a native/rewrite row in both op tables: {lacking}" if lacking \
                else "the import rule emits no IR op (it only refuses)"
    return gaps


def test_core_aten_is_enumerated():
    core = core_aten_ops()
    assert len(core) >= 150 and {"aten::add", "aten::convolution", "aten::sum"} <= core


def test_every_core_aten_op_is_covered_or_refused_with_a_reason(tables):
    gaps = _core_gaps(tables)
    unlisted = {name: why for name, why in gaps.items() if name not in CORE_REFUSED}
    assert not unlisted, ("Core ATen ops with neither an import rule plus both emit rules nor a row in "
                          f"core_aten_refused.toml: {unlisted}")


def test_no_stale_core_aten_refusal(tables):
    core, gaps = core_aten_ops(), _core_gaps(tables)
    stale = sorted(name for name in CORE_REFUSED if name in core and name not in gaps)
    gone = sorted(set(CORE_REFUSED) - core)
    assert not stale, f"core_aten_refused.toml lists ops that are now covered (delete their rows): {stale}"
    assert not gone, f"core_aten_refused.toml lists ops that are not Core ATen in this torch: {gone}"


def test_refusal_reasons_name_their_class():
    import torch

    for listed, kind in ((CORE_REFUSED, "core"), (JAX_REFUSED, "jax")):
        for name, reason in listed.items():
            assert reason.split(":")[0] in CLASSES[kind] and len(reason.split(":", 1)[1].strip()) > 5, (name, reason)
    table = {op._schema.name for op in torch.export.default_decompositions() if hasattr(op, "_schema")}
    claimed = {name for name, reason in CORE_REFUSED.items() if reason.startswith("decomposed:")}
    assert claimed <= table, f"listed as decomposed but torch has no decomposition: {sorted(claimed - table)}"


def test_a_rule_that_only_refuses_is_not_coverage(tables):
    refusing = IMPORT_RULES["torch"]["aten::linalg_eig"]  # ops/linalg/from_torch.py: a named refusal
    assert rule_ir_ops(refusing) == set()
    relu = IMPORT_RULES["torch"]["aten::relu"]
    assert {op.name for op in rule_ir_ops(relu)} >= {"relu"} and all(
        _emitted_everywhere(op, tables) for op in rule_ir_ops(relu))


# -- JAX primitives reached from keras.ops ---------------------------------------------------------------
def _sub_jaxprs(params):
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if hasattr(item, "eqns"):
                yield item
            elif hasattr(getattr(item, "jaxpr", None), "eqns"):
                yield item.jaxpr


def _collect(jaxpr, found, case):
    for eqn in jaxpr.eqns:
        found.setdefault(eqn.primitive.name, set()).add(case)
        for sub in _sub_jaxprs(eqn.params):
            _collect(sub, found, case)


@pytest.fixture(scope="module")
def reached():
    """({primitive: {case}}, {case: why it cannot be traced}) over every keras.ops case, traced once per session
    (nothing is cached across runs), as the JAX frontend traces a subclassed model's call: a call that needs a
    constant's concrete value (``ops.hamming(4)``) is traced again under ``jax.ensure_compile_time_eval``. A case
    that still cannot be traced (bincount's size from the data) reaches no primitive; portx refuses it too
    (keras_xfail.toml)."""
    import jax

    from tests.conformance.keras_ops_specs import SPECS, domain_input

    found, untraced = {}, {}
    for name, (fn, domains) in sorted(SPECS.items()):
        args = [domain_input(d, seed) for seed, d in enumerate(domains)]
        try:
            try:
                closed = jax.make_jaxpr(fn)(*args)
            except jax.errors.ConcretizationTypeError:
                with jax.ensure_compile_time_eval():
                    closed = jax.make_jaxpr(fn)(*args)
            _collect(closed.jaxpr, found, name)
        except jax.errors.JAXTypeError as exc:
            untraced[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return found, untraced


def _jax_covered(primitive) -> bool:
    return primitive in IMPORT_RULES.get("jax", {}) or primitive in CONTROL_PRIMITIVES


def test_keras_ops_cases_reach_the_common_primitives(reached):
    from tests.conformance.keras_ops_cases import XFAIL

    primitives, untraced = reached
    assert {"add", "dot_general", "exp", "reduce_sum"} <= set(primitives) and len(primitives) >= 80
    assert set(untraced) <= set(XFAIL), f"cases JAX cannot trace that portx is said to convert: {untraced}"


def test_every_reached_jax_primitive_has_an_import_rule_or_a_reason(reached):
    unlisted = {p: sorted(cases)[:3] for p, cases in reached[0].items()
                if not _jax_covered(p) and p not in JAX_REFUSED}
    assert not unlisted, ("JAX primitives (with cases reaching them) with neither an import rule nor a row in "
                          f"jax_primitives_refused.toml: {unlisted}")


def test_no_stale_jax_primitive_refusal(reached):
    stale = sorted(p for p in JAX_REFUSED if _jax_covered(p))
    unreached = sorted(set(JAX_REFUSED) - set(reached[0]))
    assert not stale, f"jax_primitives_refused.toml lists primitives that now have a rule: {stale}"
    assert not unreached, f"jax_primitives_refused.toml lists primitives no keras.ops case reaches: {unreached}"
