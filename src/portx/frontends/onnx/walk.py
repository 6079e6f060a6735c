"""Walking an ONNX graph into IR: ``OnnxCall`` (what an import rule sees) and ``lower_onnx``.

Note [onnx walk]: nodes come in topological order (the checker insists). Each value name maps either to an
IR Value or to a constant NumPy array (initializers, ``Constant`` nodes, and everything folded). A node whose
inputs are all constants is folded with ``onnx.reference.ReferenceEvaluator`` (constant folding only; the
IR never runs it on user data); the shape of an IR value is static at the example's sizes, so
``Shape``/``Size`` fold and the shape arithmetic after them folds too. Other nodes call the import rule
registered as ``IMPORT_RULES["onnx"][op_type]``. A constant reaches the IR as a parameter only when a rule
reads it as a tensor (``call.input``), under its initializer name. Unsupported nodes are collected with
their names; the nodes after them are skipped, and everything is raised together as UnsupportedOps.

Note [onnx shape arithmetic]: exporters compute sizes from the input's own shape (``F.interpolate(size=
skip.shape[2:])`` is ``Shape -> Slice -> Concat -> Resize``; ``x.view(x.size(0), -1)`` is ``Shape -> Gather ->
Unsqueeze -> Concat -> Reshape``). ``Shape``, ``Gather``, ``Slice``, ``Concat``, ``Mul``, ``Div``, ``Cast``,
``ConstantOfShape``, ``Range`` over those fold here at the example's sizes, so the rules reading them
(Resize's ``sizes``, Reshape, Expand, Tile, Slice) see constants; a rule never needs ONNX shape inference to
have followed the chain (it does not at opset 17). Which of those constants follow a free dim, and how, comes
from lowering at a second size (Note [free dims] in ir/types.py): an affine function of one dim becomes a
SymDim; one that is not (``h // 2`` after a pool) pins that dim with a warning naming the node.

Note [onnx control flow]: ``If`` with a constant condition is replaced by the branch it takes; ``Loop``
with a constant trip count and a condition that stays constant is unrolled (its scan outputs stacked). An
``If`` on a computed condition or a ``Loop`` whose count depends on data cannot be a static TPU program:
both are reported as unsupported, saying so.

Example:
    >>> graph = lower_onnx(proto, [TensorType((1, 3, 8, 8), "float32")], name="model")
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import MAX_INPUT_ELEMENTS, BadInput, Unsupported, UnsupportedOps, first_line
from ...ir import IMPORT_RULES, GraphBuilder, TensorType, Value
from ...ir.validate import IRError
from ...progress import counted
from ..call import ImportCall
from .control import inline_if, unroll_loop
from .tensors import attribute_value, dtype_name, fold_node, tensor_array

__all__ = ["OnnxCall", "lower_onnx"]

#: ops never folded: each run of the model draws anew
_RANDOM = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
#: ops answered by the walker itself (Note [onnx control flow]; Shape/Size/Constant fold)
_WALKER_OPS = {"If": inline_if, "Loop": unroll_loop}


class OnnxCall(ImportCall):
    """What an ONNX import rule sees for one node (Note [import calls] in frontends/call.py).

    ``op_type``, ``scope`` (the node's name), ``opset`` (the default domain's version); ``input(i)`` the IR
    Value of input ``i`` (None when absent; a constant becomes a parameter), ``constant(i)`` its NumPy array
    when it is a constant (else None), ``attr(name, default)`` an attribute as Python data (ints/floats as
    tuples for lists, strings decoded, tensors as arrays). Example (Relu)::

        return call.emit(UNARY["relu"], [call.input(0)])
    """

    def __init__(self, walker, node, scope):
        super().__init__(walker.builder, scope, _hint(node.output[0] if node.output else scope), _hint(scope))
        self._walker, self.node = walker, node
        self.op_type, self.opset = node.op_type, walker.opset
        self._attrs = {a.name: a for a in node.attribute}

    @property
    def n_inputs(self) -> int:
        """Number of inputs given (trailing absent ones excluded)."""
        return len(self.node.input)

    @property
    def n_outputs(self) -> int:
        """Number of outputs the node declares."""
        return len(self.node.output)

    def has_input(self, index) -> bool:
        """True when input ``index`` is given (not absent or the empty name)."""
        return index < len(self.node.input) and bool(self.node.input[index])

    def input(self, index):
        """The IR Value of input ``index`` (None when absent); a constant is stored as a parameter."""
        return self._walker.value(self.node.input[index]) if self.has_input(index) else None

    def inputs(self) -> list:
        """The IR Values of every input (None where absent)."""
        return [self.input(i) for i in range(self.n_inputs)]

    def constant(self, index):
        """The NumPy array of input ``index`` when it is a constant, else None."""
        return self._walker.consts.get(self.node.input[index]) if self.has_input(index) else None

    def ints(self, index, what="input"):
        """Input ``index`` as a tuple of Python ints; Unsupported when it is computed from data."""
        array = self.constant(index)
        if array is None:
            self.unsupported(f"{what} (input {index}) must be a constant, it is computed from data")
        return tuple(int(v) for v in np.asarray(array).reshape(-1))

    def attr(self, name, default=None):
        """An attribute as Python data, ``default`` when the node does not set it."""
        found = self._attrs.get(name)
        return default if found is None else attribute_value(found)

    def dtype_attr(self, name):
        """An element-type attribute (Cast's ``to``) as an IR dtype name; Unsupported where the IR has none."""
        return dtype_name(self.attr(name))

    def out_type(self, index=0):
        """The type ONNX shape inference gives output ``index`` (None when unknown)."""
        return self._walker.inferred.get(self.node.output[index]) if index < len(self.node.output) else None

    def output_read(self, index) -> bool:
        """True when output ``index`` exists and something reads it."""
        return index < len(self.node.output) and self.node.output[index] in self._walker.read

    def fold(self, op_type, arrays, **attrs) -> list:
        """Run one ONNX op on constant ``arrays`` with onnx's reference (to build a constant, such as a
        resize's interpolation matrix): ``call.fold("Resize", [eye, None, scales], mode="linear")``."""
        from onnx import helper

        names = [f"in{i}" if a is not None else "" for i, a in enumerate(arrays)]
        node = helper.make_node(op_type, names, ["out"], **attrs)
        return fold_node(node, arrays, self.opset)

    def rearranged(self, index, array) -> Value:
        """``array`` (input ``index``'s constant, transposed or reshaped) stored under that input's name."""
        name = self.node.input[index]
        value = self._walker.builder.param(_hint(name), np.asarray(array))
        if name in self._walker.trainable:
            self._walker.builder.trainable.append(value.name)
        return value


def _hint(name: str) -> str:
    return name.strip("/").replace("/", ".").replace("::", ".") or "v"


class _Walker:
    """One ONNX graph's walk: the builder, value map, constants and failures (Note [onnx walk])."""

    def __init__(self, proto, name, inferred):
        self.builder, self.proto = GraphBuilder(name), proto
        self.opset = next(i.version for i in proto.opset_import if i.domain in ("", "ai.onnx"))
        self.env, self.consts, self.poisoned = {}, {}, set()
        self.inferred, self.failures, self.read = inferred, {}, set()
        self.trainable = set()  # initializer names: float weights the source would train

    def value(self, name):
        if name in self.env:
            return self.env[name]
        if name in self.consts:
            value = self.builder.param(_hint(name), self.consts[name])
            if name in self.trainable:
                self.builder.trainable.append(value.name)
            self.env[name] = value
            return value
        raise IRError(f"ONNX value {name!r} is read before it is written")

    def fail(self, key, scope, reason):
        self.failures.setdefault((key, reason), []).append(scope)

    def walk(self, nodes, prefix=""):
        top = counted(nodes, lambda n: f"{n.name or '?'} ({n.op_type})") if not prefix else nodes  # progress.py
        for index, node in enumerate(top):
            self.visit(node, f"{prefix}{node.name or f'{node.op_type}_{index}'}")

    def visit(self, node, scope):
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
        rule = IMPORT_RULES.get("onnx", {}).get(key)
        special = _WALKER_OPS.get(key)
        if rule is None and special is None and not self.foldable(node):
            self.fail(key, scope, "")
            self.poison(node)
            return
        if any(n in self.poisoned for n in node.input):
            self.poison(node)  # an upstream node failed; keep scanning
            return
        try:
            if special is not None:
                special(self, node, scope)
            elif not self.fold(node):
                self.bind(node, rule[1](OnnxCall(self, node, scope)))
        except Unsupported as exc:
            self.fail(key, scope, str(exc))
            self.poison(node)
        except IRError as exc:
            raise IRError(f"node {scope} ({key}): {exc}") from exc

    def poison(self, node):
        self.poisoned.update(n for n in node.output if n)

    def foldable(self, node) -> bool:
        """A default-domain node on constants only, without subgraphs and not random."""
        return node.domain in ("", "ai.onnx") and all(not n or n in self.consts for n in node.input) and \
            not any(a.HasField("g") or a.graphs for a in node.attribute) and node.op_type not in _RANDOM

    def fold(self, node) -> bool:
        """Evaluate ``node`` when its inputs are constants; True when done."""
        if not self.foldable(node):
            return False
        for name in node.output:  # a hostile file may ask for a huge constant (ConstantOfShape, Tile)
            known = self.inferred.get(name)
            if known is not None and math.prod(known.shape) > MAX_INPUT_ELEMENTS:
                raise BadInput(f"node {node.name or node.op_type} ({node.op_type}): constant output {name!r} of shape "
                               f"{tuple(known.shape)} has more than {MAX_INPUT_ELEMENTS:.3g} elements",
                               hint="check the model; portx folds constants on the host")
        try:
            results = fold_node(node, [self.consts.get(n) if n else None for n in node.input], self.opset)
        except Exception as exc:  # noqa: BLE001 - the reference refusing is an unsupported variant
            raise Unsupported(f"could not fold a constant node: {first_line(exc, 160, type(exc).__name__)}") from None
        for name, array in zip(node.output, results):
            if name:
                self.consts[name] = np.asarray(array)
        return True

    def bind(self, node, result):
        values = result if isinstance(result, (list, tuple)) else [result]
        for name, value in zip(node.output, values):
            if name and value is not None:
                self.set(name, value)

    def set(self, name, value):
        """Bind ONNX value ``name`` to an IR Value or a constant array (a stored param counts as both)."""
        self.env.pop(name, None)
        self.consts.pop(name, None)
        if isinstance(value, np.ndarray):
            self.consts[name] = value
            return
        self.env[name] = value
        if self.builder.param_values.get(value.name) is value:
            self.consts[name] = self.builder.params[value.name]

    def value_of(self, value, hint):
        """``value`` as an IR Value: a constant array is stored as a parameter named ``hint``."""
        return self.builder.param(_hint(hint), value) if isinstance(value, np.ndarray) else value

    def get(self, name):
        """The constant array bound to ``name`` when there is one, else its IR Value."""
        return self.consts[name] if name in self.consts else self.value(name)


def lower_onnx(proto, input_types, name="model", inferred=None, paired=None):
    """Lower the (checked) ONNX ``proto`` with its graph inputs typed by ``input_types`` to an IR Graph.

    ``inferred`` maps value names to ONNX shape inference's types (for messages); ``paired``, when given, is
    filled with {IR value name: ONNX value name} for the node outputs that are IR values. Raises UnsupportedOps
    naming every node without a rule (Note [onnx walk]). Example: ``lower_onnx(proto, [TensorType(...)])``.
    """
    walker = _Walker(proto, name, inferred or {})
    graph = proto.graph
    walker.read = {n for node in _every_node(graph) for n in node.input} | {o.name for o in graph.output}
    for tensor in graph.initializer:
        array = tensor_array(tensor)
        walker.consts[tensor.name] = array
        if array.dtype.kind == "f" and array.size > 1:
            walker.trainable.add(tensor.name)
    for info, type_ in zip(data_inputs(graph), input_types):
        walker.env[info.name] = walker.builder.input(_hint(info.name), type_)
    walker.walk(graph.node)
    if walker.failures:
        items = [(key, scopes, reason) for (key, reason), scopes in walker.failures.items()]
        raise UnsupportedOps(items, where=f"ONNX model {graph.name or name}")
    outs = [walker.value(o.name) for o in graph.output]
    built = walker.builder.finish(outs)
    if paired is not None:
        params = walker.builder.param_values
        paired.update({v.name: k for k, v in walker.env.items() if params.get(v.name) is not v})
    return _without_unused_params(built)


def _every_node(graph):
    for node in graph.node:
        yield node
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                yield from _every_node(sub)


def data_inputs(graph) -> list:
    """The graph inputs a caller feeds (old models list their initializers as inputs too)."""
    init = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in init]


def _without_unused_params(graph):
    used = {v.name for node in graph.nodes for v in node.inputs if v is not None} | {v.name for v in graph.outputs}
    params = {k: a for k, a in graph.params.items() if k in used}
    values = {k: v for k, v in graph.param_values.items() if k in used}
    meta = dict(graph.meta)
    if "trainable" in meta:
        meta["trainable"] = [n for n in meta["trainable"] if n in params]
    return graph.replace(params=params, param_values=values, meta=meta)


def input_type(info, shape) -> TensorType:
    """The IR type of graph input ``info`` (a ValueInfoProto) at the example ``shape``."""
    return TensorType(tuple(shape), dtype_name(info.type.tensor_type.elem_type))
