"""ONNX import rule for Dropout: kept as the IR's training-time dropout with the graph's ratio (the
identity at inference, as onnxruntime runs it; its ``mask`` output is all True there); ``training_mode`` is refused.

Example: ``Dropout(%x, ratio=0.1)`` -> ``dropout(%x) {rate=0.1}``.
"""
from __future__ import annotations

import numpy as np

from ..dropout import DROPOUT

__all__ = []


@DROPOUT.imports("onnx", "Dropout")
def _dropout_from_onnx(call):
    training = call.constant(2) if call.has_input(2) else np.array(False)
    if training is None or bool(np.asarray(training)):
        call.unsupported("training_mode is set or computed from data; export the model in eval mode")
    ratio = call.constant(1) if call.has_input(1) else np.array(0.5)
    if ratio is None:
        call.unsupported("a dropout ratio computed from data")
    rate = float(np.asarray(ratio).reshape(-1)[0])
    x = call.input(0)
    y = x if rate == 0 else call.emit(DROPOUT, [x], {"rate": rate})
    return [y, np.ones(x.type.shape, dtype=bool)]  # the mask keeps everything at inference
