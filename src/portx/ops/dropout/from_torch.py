"""torch import rules for dropout: ``nn.Dropout`` (``aten::dropout``) and ``nn.Dropout1d/2d/3d``
(``aten::feature_dropout``, one mask value per channel).

A program that needs decompositions first has its dropouts renamed to ``portx_ir::dropout``, which
decompositions keep (``frontends/torch/__init__.py``, Note [kept dropout]); both names land here.

Example: ``nn.Dropout2d(0.2)`` on (N, C, H, W) -> ``dropout {rate=0.2, axes=(2, 3)}``.
"""
from __future__ import annotations

from ..dropout import DROPOUT

__all__ = []


@DROPOUT.imports("torch", "aten::dropout", "aten::feature_dropout", "portx_ir::dropout")
def _dropout_from_aten(call):
    """``dropout(input, p, train)``; feature dropout shares the mask along every axis after the channels."""
    x = call.arg("input", call.arg("x"))
    feature = call.arg("feature", "feature_dropout" in str(call.node.target))
    axes = tuple(range(2, x.type.rank)) if feature else ()
    return call.emit(DROPOUT, [x], {"rate": float(call.arg("p")), "axes": axes})
