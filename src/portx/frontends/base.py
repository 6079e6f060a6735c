"""What a Source may answer beyond the core of the protocol (frontends/__init__.py), declared with a default, so
verification asks a source instead of probing its attributes (``hasattr(src, ...)``, ``getattr(src, ..., None)``).

- ``differentiable() -> Differentiable``: the model the gradient check differentiates and the framework that does
  it (TORCH or KERAS), or ``model`` None and ``why`` (verification/grads.py). Every Target names the
  ``framework`` its loaded models run in, so the converted side is a ``Differentiable`` too.
- ``examples() -> list | None``: the example inputs the source was loaded with (tensors or arrays), or None
  (verification/domain.py verifies on them first).
- ``stream_intermediates(arrays, keep, release) -> (names, iterator) | None``: ``intermediates`` made one at a
  time, or None where the source makes them all at once (verification/streaming.py).

Every frontend's Source class derives from ``SourceBase``, which gives each answer's default.

Example:
    >>> d = src.differentiable()
    >>> d.model is None or d.framework in (TORCH, KERAS)
    True
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Differentiable", "SourceBase", "TORCH", "KERAS"]

#: a ``torch.nn.Module`` (or a callable of tensors), differentiated with ``torch.autograd``
TORCH = "torch"
#: a ``keras.Model``, differentiated with ``jax.grad`` over ``stateless_call`` (KERAS_BACKEND=jax)
KERAS = "keras"


@dataclass(frozen=True)
class Differentiable:
    """``model`` to differentiate with ``framework`` (TORCH or KERAS), or ``model`` None and ``why`` it cannot be.
    Example: ``Differentiable(None, why="the source cannot be differentiated here")``."""

    model: object = None
    framework: str | None = None
    why: str = ""


class SourceBase:
    """The defaults of a Source's optional answers (module docstring); a frontend overrides what it has."""

    def differentiable(self) -> Differentiable:
        """None: the source runs in a runtime without gradients (onnxruntime, TensorFlow's graph)."""
        return Differentiable(why="the source cannot be differentiated here")

    def examples(self) -> list | None:
        """None: the source was loaded without example inputs."""
        return None

    def stream_intermediates(self, arrays, keep=None, release=None) -> tuple | None:
        """None: the source makes its intermediates all at once (``intermediates``)."""
        return None
