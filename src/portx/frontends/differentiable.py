"""What the gradient check differentiates: a source's model or a converted one, with the framework that does it.

Every Source answers ``differentiable()`` (the Source protocol in frontends/__init__.py) and every Target names
the ``framework`` its models run in, so verification/grads.py asks them instead of probing a model's attributes.

Example:
    >>> d = src.differentiable()
    >>> d.model is None or d.framework in (TORCH, KERAS)
    True
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Differentiable", "TORCH", "KERAS"]

#: a ``torch.nn.Module`` (or a callable of tensors), differentiated with ``torch.autograd``
TORCH = "torch"
#: a ``keras.Model``, differentiated with ``jax.grad`` over ``stateless_call`` (KERAS_BACKEND=jax)
KERAS = "keras"


@dataclass(frozen=True)
class Differentiable:
    """``model`` to differentiate with ``framework`` (TORCH or KERAS), or ``model`` None and ``why`` it cannot be.
    Example: ``Differentiable(None, why="an ONNX model has no gradients here")``."""

    model: object = None
    framework: str | None = None
    why: str = ""
