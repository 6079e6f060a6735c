"""Live ``nn.Module``s as sources: checked, exported once with their batch and ``--dynamic`` axes symbolic (Note
[symbolic export] in symbols.py), a batch of 1 traced at 2 where it may stay free (Note [batch of one]).

Example:
    >>> src = from_module(net, (torch.randn(2, 3),))
    >>> src.run(np.ones((2, 3), np.float32))[0].shape
"""
from __future__ import annotations

import numpy as np
import torch

from ...errors import BadInput
from ...ir import batch_inputs
from . import export_module
from .source import TorchSource, resize_tensor
from .symbols import export_free, named_sites

__all__ = ["from_module"]


def from_module(module, example_inputs, label=None, batch=None, free=()) -> TorchSource:
    """Wrap a live ``nn.Module`` with example inputs (tensors or NumPy arrays); ``batch``: trace an example batch
    of 1 at this many rows instead, where the module traces there (Note [batch of one]); ``free``: ``--dynamic``
    specs (``["x:1"]``) of the axes exported symbolic besides the batch (Note [symbolic export])."""
    if not isinstance(module, torch.nn.Module):
        raise BadInput(f"{type(module).__name__} is not a torch.nn.Module", hint="pass an nn.Module or a file path")
    if example_inputs is None:
        raise BadInput(f"{type(module).__name__}: example_inputs are required for a live module",
                       hint="pass example_inputs=(tensor, ...) with the shapes to convert for")
    if isinstance(example_inputs, (torch.Tensor, np.ndarray)):  # one bare input: the common slip
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise BadInput(f"{type(module).__name__}: example_inputs is a {type(example_inputs).__name__}",
                       hint="pass a tuple of tensors, one per forward argument: example_inputs=(x,)")
    inputs = tuple(torch.as_tensor(np.asarray(x)) if not isinstance(x, torch.Tensor) else x for x in example_inputs)
    _check_input_dtypes(module, inputs)
    module.eval()
    wider = _batch_at(inputs, batch) if batch else None
    if wider is not None:  # Note [batch of one]
        try:
            return _exported(module, wider, label or type(module).__name__, free, batch_given=1)
        except BadInput:  # not at that batch: traced at the example's, and find_free says why it stays pinned
            pass
    return _exported(module, inputs, label or type(module).__name__, free)


def _exported(module, inputs, label, free, batch_given=0) -> TorchSource:
    """``module`` exported once with axis 0 of its batch inputs and the ``free`` axes (``--dynamic`` specs) symbolic
    (Note [symbolic export]); at static sizes where torch.export cannot trace it so."""
    sites = [(i, 0) for i in batch_inputs([tuple(t.shape) for t in inputs])] + named_sites(module, inputs, free)
    program, pinned = export_free(module, inputs, sites) if sites else (None, None)
    if program is None:
        return TorchSource(export_module(module, inputs), inputs, module, label, batch_given=batch_given)
    return TorchSource(program, inputs, module, label, batch_given=batch_given, pinned=pinned)


def _batch_at(inputs, n):
    """``inputs`` with their batch (``batch_inputs``) of 1 repeated to ``n`` rows; None when the batch is not 1, or
    another input's axis 0 is ``n`` (the batch would then take it in: ``block_diag`` of 1, 2 and 3 rows)."""
    axes = batch_inputs([tuple(t.shape) for t in inputs])
    if not axes or inputs[axes[0]].shape[0] != 1:
        return None
    if any(t.dim() and t.shape[0] == n for i, t in enumerate(inputs) if i not in axes):
        return None
    return tuple(resize_tensor(t, {0: n}) if i in axes else t for i, t in enumerate(inputs))

# Note [batch of one]: torch specializes a size of 1, so find_free (session/dims/find.py) traces and lowers a
# batch-1 example again at 2 (ONE_TRACED_AT) before diffing it with 3, and the graph at 1 is thrown away. When
# the batch may stay free (no --static-batch, no --dynamic on an axis 0; other --dynamic axes are exported
# symbolic at 2 rows as at 1), convert asks ``load`` for a live module traced at 2 from the start (rows repeated):
# one torch.export and one lowering fewer (resnet50: 0.9 s of 11; a sequence model with --dynamic x:1 at batch 1:
# one export and one lowering, where it took two of each). A module that does not trace at 2 is traced at its
# example, as before. ``batch_given`` keeps the 1: convert verifies the user's own example there
# (verification/dynamic.py ``example_shapes``), not the rows repeated.


def _check_input_dtypes(module, inputs):
    """A floating input of another dtype than the model's floating weights is the user's mistake (float16
    given to a float32 model): say so, instead of failing deep inside lowering."""
    weights = {p.dtype for p in module.parameters() if p.is_floating_point()}
    if len(weights) != 1:
        return
    (dtype,) = weights
    for i, x in enumerate(inputs):
        if x.is_floating_point() and x.dtype != dtype:
            name = str(dtype).replace("torch.", "")
            raise BadInput(f"{type(module).__name__}: input {i} is {str(x.dtype).replace('torch.', '')} but the "
                           f"model's weights are {name}",
                           hint=f"give {name} inputs (--input NAME:SHAPE:{name}), or convert the model to the "
                                "input dtype first")
