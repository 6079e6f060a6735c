"""ONNX frontend: ``.onnx`` files (and in-memory ``onnx.ModelProto``) -> IR, with onnxruntime as the reference.

Modules: ``files`` (safe reading: Note [onnx loading]), ``source`` (``OnnxSource``: Note [onnx free dims]),
``walk`` (``OnnxCall`` and the lowering: Note [onnx walk]), ``control`` (If/Loop: Note [onnx control flow]),
``tensors`` (attributes, dtypes, constant folding). The per-op import rules live in the op families'
``from_onnx.py`` modules, registered as ``IMPORT_RULES["onnx"]["Conv"]``.

Example:
    >>> src = load_onnx_source("model.onnx")
    >>> graph = src.lower("model")
"""
from __future__ import annotations

from .source import OnnxSource, load_onnx_source
from .walk import OnnxCall, lower_onnx

__all__ = ["OnnxSource", "OnnxCall", "load_onnx_source", "lower_onnx"]
