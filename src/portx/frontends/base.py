"""What a Source may answer beyond the core of the protocol (frontends/__init__.py), declared with a default, so
verification asks a source instead of probing its attributes (``hasattr(src, ...)``, ``getattr(src, ..., None)``).

- ``differentiable() -> Differentiable``: the model the gradient check differentiates and the framework that does
  it (TORCH or KERAS), or ``model`` None and ``why`` (verification/grads.py). Every Target names the
  ``framework`` its loaded models run in, so the converted side is a ``Differentiable`` too.
- ``examples() -> list | None``: the example inputs the source was loaded with (tensors or arrays), or None
  (verification/domain.py verifies on them first).
- ``stream_intermediates(arrays, keep, release) -> (names, iterator) | None``: ``intermediates`` made one at a
  time, or None where the source makes them all at once (verification/streaming.py).
- ``given_batch() -> int``: the example's batch as given where the source was traced at another (a batch of 1
  traced at 2: Note [batch of one] in frontends/torch/live.py), else 0 (session/dims/plan.py).
- ``pinned_dims() -> dict | None``: {(input, axis): why} for the axes exported free that the exporter specialised;
  None where the source was not exported symbolically (Note [symbolic export]; session/dims/find.py).
- ``fallback_notes() -> list``: why a free dim was found by two lowerings instead of the source's symbols, a line
  each for the report's warnings (session/dims/find.py).

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

    def given_batch(self) -> int:
        """0: the source was traced at the example's batch."""
        return 0

    def pinned_dims(self) -> dict | None:
        """None: the source was not exported with symbolic dims."""
        return None

    def fallback_notes(self) -> list:
        """None to say: the free dims came from the source's symbols or were not looked for."""
        return []
