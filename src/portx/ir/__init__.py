"""The portx IR: types, graph, op declarations, validation, text form and (de)serialization."""
from .builder import GraphBuilder
from .graph import Graph, Node, fresh_name, param_value
from .opdef import IMPORT_RULES, REGISTRY, REQUIRED, OpDef, imports, lookup
from .serde import load_graph, save_graph
from .text import format_graph, format_node, parse_graph, window
from .types import DTYPES, FreeDimRefused, SymDim, TensorType, Value, batch_inputs
from .validate import IRError, infer_outputs, validate

__all__ = ["GraphBuilder", "Graph", "Node", "fresh_name", "param_value", "IMPORT_RULES", "REGISTRY", "REQUIRED", "OpDef", "imports",
           "lookup",
           "load_graph", "save_graph", "format_graph", "format_node", "parse_graph", "window",
           "DTYPES", "FreeDimRefused", "SymDim", "batch_inputs", "TensorType", "Value", "IRError", "infer_outputs", "validate"]
