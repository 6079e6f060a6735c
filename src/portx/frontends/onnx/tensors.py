"""ONNX data as Python: attributes, dtypes, and constant folding with the ONNX reference evaluator.

Example:
    >>> dtype_name(1)                      # TensorProto.FLOAT
    'float32'
    >>> fold_node(node, [np.ones(2), np.ones(2)], opset=17)    # an Add of two constants
"""
from __future__ import annotations

import numpy as np

from ...errors import Unsupported
from ...ir import DTYPES

__all__ = ["attribute_value", "dtype_name", "fold_node", "onnx_elem_type", "tensor_array"]


def dtype_name(dtype) -> str:
    """An ONNX elem type (int) or NumPy dtype as an IR dtype name; Unsupported when the IR has none."""
    if isinstance(dtype, (int, np.integer)):
        from onnx import helper

        try:
            dtype = helper.tensor_dtype_to_np_dtype(int(dtype))
        except (KeyError, ValueError):
            raise Unsupported(f"ONNX element type {int(dtype)} has no NumPy form") from None
    name = str(np.dtype(dtype)) if str(dtype) != "bfloat16" else "bfloat16"
    if name not in DTYPES:
        raise Unsupported(f"dtype {name} is not one portx converts ({', '.join(DTYPES)})")
    return name


def onnx_elem_type(dtype_name_: str) -> int:
    """The ONNX elem type for an IR dtype name: ``onnx_elem_type("float32") == TensorProto.FLOAT``."""
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype_name_) if dtype_name_ != "bfloat16" else
                                           __import__("ml_dtypes").bfloat16)


def attribute_value(attr):
    """An AttributeProto as Python data: numbers, tuples, decoded strings, arrays (None for a missing one)."""
    if attr is None:
        return None
    from onnx import helper, numpy_helper

    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value)
    if hasattr(value, "dims") and hasattr(value, "data_type"):  # a TensorProto
        return numpy_helper.to_array(value)
    return value


def _gather_elements(node, data, index):
    """GatherElements with NumPy (onnx.reference's falls back to a wrong per-row path past 32 choices)."""
    from onnx import helper

    axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), 0) % data.ndim
    return [np.take_along_axis(data, np.where(index < 0, index + data.shape[axis], index), axis)]


#: ops folded by portx itself where ``onnx.reference`` gets them wrong: op type -> fn(node, *arrays) -> [array]
_OWN_FOLDS = {"GatherElements": _gather_elements}


def fold_node(node, arrays, opset) -> list:
    """Run one node on constant ``arrays`` (None for an absent input) with ``onnx.reference``."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    if node.op_type in _OWN_FOLDS:
        return _OWN_FOLDS[node.op_type](node, *[np.asarray(a) for a in arrays])

    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype), None)
              for name, a in zip(node.input, arrays) if name]
    outputs = [helper.make_value_info(name, helper.make_empty_tensor_value_info(name).type)
               for name in node.output if name]
    graph = helper.make_graph([node], "fold", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    feeds = {name: np.asarray(a) for name, a in zip(node.input, arrays) if name}
    results = ReferenceEvaluator(model).run(None, feeds)
    names = [n for n in node.output if n]
    by_name = dict(zip(names, results))
    out = []
    for name in node.output:
        array = by_name.get(name) if name else None
        if name and not isinstance(array, (np.ndarray, np.generic)):
            raise Unsupported(f"{node.op_type} makes a {type(array).__name__} (an ONNX sequence or optional), "
                              "not a tensor")
        if array is not None:
            array = np.asarray(array)
            dtype_name(array.dtype)
        out.append(array)
    return out


def tensor_array(tensor) -> np.ndarray:
    """A TensorProto as a NumPy array with an IR dtype (Unsupported for strings and others)."""
    from onnx import numpy_helper

    array = numpy_helper.to_array(tensor)
    dtype_name(array.dtype)  # refuses what the IR has no name for
    return np.ascontiguousarray(array).reshape(array.shape)  # ascontiguousarray makes 0-d arrays 1-d
