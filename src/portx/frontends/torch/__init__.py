"""PyTorch frontend: ExportedProgram -> IR.

Note [torch lowering]: the program is first brought to inference IR with ``run_decompositions({})``
(functional; batch norm as ``_native_batch_norm_legit_no_training``) which keeps conv, linear,
layer_norm, gelu, upsample and ``scaled_dot_product_attention`` whole. Only ops that portx has no import rule for are then
decomposed, with torch's own decomposition entries, so the IR sees high-level ops where it
understands them and small core-ATen pieces elsewhere. Anything that does not depend on a user
input (arange, full, a transposed weight) is folded by running torch itself, so constant
semantics are torch's by construction; arithmetic on a trainable parameter is not (torch_training.py).

Note [run-time tables] (torch_dynamic.py): sinusoidal tables are computed at run time.
Note [kept dropout], Note [in-place ops] (torch_training.py): dropouts keep rates; relu_ on a temporary is relu.

Example:
    >>> graph = lower_exported(torch.export.export(model.eval(), (x,)))
"""
from __future__ import annotations

import operator

import numpy as np
import torch

from ...errors import BadInput, Unsupported, UnsupportedOps
from ...ir import IMPORT_RULES, Graph, GraphBuilder, TensorType, Value
from ...progress import counted
from ..call import ImportCall
from ...weights.tensors import array_of
from .keys import source_keys
from .names import module_classes, module_kind, op_name as _op_name, scope_of
from .records import type_error
from .training import (casts_to_bfloat16, decompose_keeping_dropout, functional_inplace, rearranges,
                             remove_effect_tokens, stops_gradient)
from .dynamic import computed_at_run_time, known_sizes, refuse_data_dependent
from .symbols import export_module, size_hints

__all__ = ["lower_exported", "walk_program", "export_module", "torch_dtype_name", "TorchCall", "rule_for", "state_of"]

_SKIP = {"aten::_assert_tensor_metadata", "aten::_assert_scalar", "aten::sym_constrain_range_for_size",
         "aten::_assert_async", "aten::sym_constrain_range", "aten::_linalg_check_errors"}  # Note [effect tokens]


# Ops whose result depends on their tensor inputs only through the (static) shape and dtype.
_SHAPE_ONLY = {"aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like", "aten::new_zeros",
               "aten::new_ones", "aten::new_full", "aten::new_empty", "aten::scalar_tensor", "aten::sym_size",
               "aten::sym_numel", "aten::sym_storage_offset"}  # the last only feeds torch's own run-time asserts


def torch_dtype_name(dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).replace("torch.", "")


def rule_for(target):
    """The (OpDef, rule) pair for an fx call target, or None."""
    return IMPORT_RULES.get("torch", {}).get(_op_name(target))


class TorchCall(ImportCall):
    """What an import rule sees for one fx node (Note [import calls] in frontends/call.py).

    ``arg(name)`` gives an IR Value for tensor arguments (lists of Values for Tensor[]), and plain
    Python data otherwise. ``emit`` appends a node and returns its output Value (or list).
    """

    def __init__(self, lowering, node):
        super().__init__(lowering.builder, scope_of(node), node.name)
        self._low, self.node = lowering, node
        self.module_kind = module_kind(node)  # class name of the source module (``Dropout``)
        self.bound = lowering.bind(node)

    def out_type(self, index=0) -> TensorType:
        """The type torch recorded for output ``index``."""
        return self._low.meta_types(self.node)[index]

    def output_read(self, index) -> bool:
        """True when a user reads output ``index`` of this multi-output node (Note [unused outputs])."""
        return any(u.target is not operator.getitem or (u.args[1] == index and len(u.users) > 0)
                   for u in self.node.users)

    def const(self, array, hint="const") -> Value:
        """A new stored constant (e.g. an index table computed by the rule), contiguous (``_Lowering.new_param``).
        A number the program itself spells (``x + 2``) is recorded as one: never a size (Note [literal or size])."""
        value = self._low.new_param(f"{self.prefix}.{hint}", array)
        if np.ndim(array) == 0 and np.asarray(array).dtype.kind in "iu" and int(array) in _literal_ints(self.node):
            self._low.literals.add(value.name)
        return value

    def constant(self, value):
        """The stored array behind ``value`` (a folded constant or a parameter), else None."""
        builder = self.builder
        return builder.params.get(value.name) if builder.param_values.get(value.name) is value else None


def _literal_ints(node) -> set:
    """The ints written as numbers among an fx node's arguments (``2`` in ``add(x, 2)``), lists flattened; a size
    torch computed from a symbol is an fx node there, never a number (Note [literal or size] in symbols.py)."""
    found, todo = set(), [*node.args, *node.kwargs.values()]
    while todo:
        arg = todo.pop()
        if isinstance(arg, (list, tuple)):
            todo.extend(arg)
        elif isinstance(arg, int) and not isinstance(arg, bool):
            found.add(arg)
    return found


class _Lowering:
    """Walks one ExportedProgram; holds the fx node -> value environment and the folded constants, and emits into
    a ``GraphBuilder``."""

    def __init__(self, ep, at=None):  # at: {symbol: size} of a symbolic program (Note [symbolic export])
        self.ep, self.sizes = ep, {**known_sizes(ep), **size_hints(ep), **(at or {})}  # never int(SymInt): it guards
        self.builder = GraphBuilder()  # the nodes, params, taken names, dropped modules and trainable params
        self.env = {}  # fx node -> IR Value (or list of them)
        self.consts = {}  # fx node -> torch.Tensor / list, for nodes that do not depend on user inputs
        self.const_names = {}  # fx node -> preferred parameter name (state_dict key)
        self.failures = {}  # (op, reason) -> scopes
        self.trainable_fx = set()  # fx nodes holding a trainable parameter (or a view of one)
        self.parameters = set(ep.graph_signature.inputs_to_parameters)
        self.literals = set()  # names of stored ints the program spells as numbers (Note [literal or size])

    # -- environment --------------------------------------------------------------------
    def scope_of(self, node) -> str:
        return scope_of(node)

    def meta_types(self, node) -> list:
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        return [self.tensor_type(v, node) if isinstance(v, torch.Tensor) else None for v in vals]

    def tensor_type(self, tensor, node) -> TensorType:
        shape = []
        for d in tensor.shape:
            if not isinstance(d, int):
                try:
                    d = int(d.node.expr.xreplace(self.sizes)) if self.sizes else int(d)
                except Exception:
                    raise BadInput(f"node {self.scope_of(node) or node.name}: dimension {d} is dynamic",
                                   hint="TPUs need static shapes: export with concrete input sizes "
                                        "(no torch.export.Dim) or pass --input with the size to use") from None
            shape.append(d)
        return TensorType(tuple(shape), torch_dtype_name(tensor.dtype))

    def new_param(self, hint, array) -> Value:
        """A parameter holding a contiguous copy of ``array`` (torch's folded constants are strided views)."""
        array = np.asarray(array)
        return self.builder.param(hint, np.ascontiguousarray(array).reshape(array.shape))  # 0-d stays 0-d

    def value_of(self, fx):
        """IR value for an fx argument node, materialising folded constants as parameters."""
        if fx in self.env:
            return self.env[fx]
        const = self.consts[fx]
        if isinstance(const, (int, float, bool)):  # a folded size (sym_size) read as an argument
            return const
        if isinstance(const, (list, tuple)):
            raise Unsupported("a constant list of tensors is used as a value")
        array = array_of(const)
        self.env[fx] = self.new_param(self.const_names.get(fx, fx.name), array)
        if fx in self.trainable_fx:
            self.builder.trainable.append(self.env[fx].name)
        return self.env[fx]

    def bind(self, node) -> dict:
        schema = node.target._schema
        bound = {}
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args):
                raw = node.args[i]
            elif arg.name in node.kwargs:
                raw = node.kwargs[arg.name]
            else:
                raw = arg.default_value if arg.has_default_value() else None
            bound[arg.name] = self.convert(raw)
        return bound

    def convert(self, raw):
        if isinstance(raw, torch.fx.Node):
            return self.value_of(raw)
        if isinstance(raw, (list, tuple)):
            return [self.convert(r) for r in raw]
        if isinstance(raw, torch.dtype):
            return torch_dtype_name(raw)
        if isinstance(raw, (torch.device, torch.layout, torch.memory_format)):
            return None
        return raw

    # -- walking ------------------------------------------------------------------------
    def placeholder(self, node, user_inputs, state):
        if node.name in user_inputs:
            types = self.meta_types(node)
            if types[0] is None:
                raise BadInput(f"input {node.name}: only tensor inputs are supported",
                               hint="wrap non-tensor arguments in the module or bake them in as constants")
            if 0 in types[0].shape:
                raise BadInput(f"input {node.name}: zero-size dimension in shape {types[0].shape}",
                               hint="convert with a non-empty example input (e.g. batch size 1)")
            self.env[node] = value = self.builder.input(node.name, types[0])
            return value
        target = state[node.name]
        self.consts[node] = target[1]
        self.const_names[node] = target[0]
        if node.name in self.parameters and getattr(target[1], "requires_grad", True):
            self.trainable_fx.add(node)
        return None

    def fold(self, node) -> bool:
        """Evaluate ``node`` with torch when all of its inputs are constants; True when done."""
        shape_only = _op_name(node.target) in _SHAPE_ONLY
        if not shape_only and (computed_at_run_time(node) or casts_to_bfloat16(node)):
            return False
        if not shape_only and not all(n in self.consts for n in node.all_input_nodes):
            return False
        if not (shape_only or rearranges(node) or stops_gradient(node)) and \
                any(n in self.trainable_fx for n in node.all_input_nodes):
            return False  # arithmetic on a parameter stays in the graph, so that the parameter still trains

        def const_of(n):  # ops in _SHAPE_ONLY read only the static shape of their inputs
            if n in self.consts:
                return self.consts[n]
            val = n.meta["val"]
            return torch.zeros(self.tensor_type(val, n).shape, dtype=val.dtype)  # Note [static sizes]

        args = torch.fx.node.map_arg(node.args, const_of)
        kwargs = torch.fx.node.map_arg(node.kwargs, const_of)
        try:
            with torch.no_grad():
                self.consts[node] = node.target(*args, **kwargs)
        except Exception:  # not foldable on the host (e.g. needs a device); lower it instead
            return False
        sources = [n for n in node.all_input_nodes if n in self.consts]
        if rearranges(node) and len(sources) == 1 and sources[0] in self.trainable_fx:
            self.trainable_fx.add(node)  # a transposed or reshaped parameter still trains
        if len(sources) == 1 and self.consts[node] is self.consts[sources[0]] and sources[0] in self.const_names:
            self.const_names[node] = self.const_names[sources[0]]  # ``to`` its own dtype: the same tensor, named so
        return True

    def call(self, node):
        name = _op_name(node.target)
        if node.target is operator.getitem:
            source, index = node.args
            table = self.consts if source in self.consts else self.env
            picked = table[source][index]
            if picked is None and node.users:  # Note [unused outputs]
                self.failures.setdefault((_op_name(source.target), f"output {index} is not supported"),
                                         []).append(self.scope_of(node))
                picked = self.stand_in(node)
            table[node] = picked
            return
        if name in _SKIP or self.fold(node):
            return
        found = rule_for(node.target)
        try:
            if found is None:
                raise Unsupported("")
            result = found[1](TorchCall(self, node))
            self.check_result(node, result)
            self.env[node] = result
        except Unsupported as exc:
            self.failures.setdefault((name, str(exc)), []).append(self.scope_of(node))
            self.env[node] = self.stand_in(node)

    def stand_in(self, node):
        """Values of the recorded types, so the walk goes on and every failure is collected."""
        vals = [Value(self.builder.fresh(node.name), t or TensorType((), "float32")) for t in self.meta_types(node)]
        return vals[0] if not isinstance(node.meta.get("val"), (list, tuple)) else vals

    def check_result(self, node, result):
        """Check the rule's output types against torch's record.

        Note [unused outputs]: a rule may return None for outputs of a multi-output op that
        inference never reads (batch norm's saved mean/invstd); a getitem that does read one is
        reported as an unsupported op instead of failing here.
        """
        got = result if isinstance(result, (list, tuple)) else [result]
        want = self.meta_types(node)
        for value, expected in zip(got, want):
            if value is not None and expected is not None and value.type != expected:
                raise type_error(node, self.scope_of, value.type, expected)  # Note [recorded types]


def _unknown_targets(ep, table) -> set:
    """ATen targets without an import rule (limited to those ``table`` can decompose, if given); without a table,
    also the higher-order ops of the training IR (``wrap_with_autocast``), which only the re-trace inlines."""
    if table is None:
        regions = {n.target for n in ep.graph.nodes if n.op == "call_function"
                   and isinstance(n.target, torch._ops.HigherOrderOperator) and rule_for(n.target) is None}
        if regions:
            return regions
    return {n.target for n in ep.graph.nodes
            if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
            and rule_for(n.target) is None and _op_name(n.target) not in _SKIP
            and not _op_name(n.target).startswith(("aten::sym_", "aten::arange"))  # always folded: re-tracing to
            # decompose them costs a trace (Note [symbolic export]) for a constant of the same value
            and (table is None or n.target in table)}


def _prepare(ep):
    """Inference IR, then decompose only the ops no import rule knows (Note [torch lowering])."""
    if _unknown_targets(functional_inplace(ep, rule_for), None):  # re-tracing costs seconds: only when needed
        ep = decompose_keeping_dropout(ep)
    table = dict(torch.export.default_decompositions().items())
    for _ in range(4):
        unknown = _unknown_targets(ep, table)
        if not unknown:
            break
        ep = ep.run_decompositions({t: table[t] for t in unknown})
    return remove_effect_tokens(ep)


def state_of(ep) -> dict:
    """Placeholder name -> (state_dict key, tensor) for parameters, buffers and constants."""
    sig, state, consts = ep.graph_signature, ep.state_dict, ep.constants
    result = {}
    for spec in sig.input_specs:
        if spec.target is None:
            continue
        tensor = state.get(spec.target) if spec.target in state else consts.get(spec.target)
        if tensor is not None:
            result[spec.arg.name] = (spec.target, tensor)
    return result


def walk_program(ep, at=None, cache=None):
    """Prepare ``ep`` (once per ``cache`` dict) and run every import rule, its symbols at the sizes ``at``; returns
    (prepared program, lowering state).

    The state maps each fx node to its IR value (``env``), and holds the emitted nodes, the
    parameters, the graph inputs and the fx outputs; ``lower_exported`` assembles the Graph.
    """
    ep = cache["program"] if cache and "program" in cache else _prepare(ep)
    if cache is not None:  # re-tracing a symbolic program is slow: once for all its sizes (Note [symbolic export])
        cache["program"] = ep
    low = _Lowering(ep, at)
    state = state_of(ep)
    user_inputs = set(ep.graph_signature.user_inputs)
    low.fx_outputs = []
    for node in counted(ep.graph.nodes, lambda n: n.name):  # progress.py: the display's node count
        if node.op == "placeholder":
            low.placeholder(node, user_inputs, state)
        elif node.op == "call_function":
            low.call(node)
        elif node.op == "output":  # an input the source writes in place (``x.uniform_()``) is not an output
            low.fx_outputs = [fx for fx, s in zip(node.args[0], ep.graph_signature.output_specs) if s.kind.name == "USER_OUTPUT"]
    return ep, low


def lower_exported(ep, name="model", strict_tpu=False, at=None, cache=None, walk=None) -> Graph:
    """Lower an ExportedProgram to a validated IR Graph, a symbolic one's at the sizes ``at`` ({symbol: int}).

    Raises UnsupportedOps listing every op without an import rule, with scopes and counts, and
    every data-dependent op (NotTpuLegal, exit 4, when ``strict_tpu``). ``walk``: walk_program, or one that keeps it.
    """
    refuse_data_dependent(ep, strict_tpu)
    ep, low = walk(ep) if walk is not None else walk_program(ep, at, cache)
    if low.failures:
        items = [(op, scopes, reason) for (op, reason), scopes in low.failures.items()]
        raise UnsupportedOps(items)
    outs = []
    for fx in low.fx_outputs:
        if not isinstance(fx, torch.fx.Node):
            raise BadInput(f"output {fx!r}: only tensor outputs are supported",
                           hint="return tensors (or a tuple of tensors) from forward()")
        outs.append(low.value_of(fx))
    built = low.builder
    used = {v.name for n in built.nodes for v in n.inputs if v is not None} | {v.name for v in outs}
    params = {k: a for k, a in built.params.items() if k in used}
    values = {k: v for k, v in built.param_values.items() if k in used}
    meta = {"dropped": built.dropped} if built.dropped else {}
    meta["trainable"] = [name for name in built.trainable if name in params]
    meta["module_classes"] = module_classes(ep.graph)
    meta.update(source_keys(ep, params))
    return Graph(tuple(built.inputs), tuple(outs), tuple(built.nodes), params, values, name, meta)
