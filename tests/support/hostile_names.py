"""A torch module whose submodule names try to inject code into the emitted model.py (Note [untrusted names]).

Every payload would create ``marker`` if it ran; the tests assert it never exists.

Example:
    >>> model = Evil(str(tmp_path / "MARKER"))
    >>> portx.convert(model, example_inputs=(torch.randn(2, 4),), out=tmp_path / "out")
"""
import torch
from torch import nn

__all__ = ["EVIL", "Evil"]

#: hostile names, ``{m}`` standing for the marker path
EVIL = [
    "a'); open('{m}', 'w'); ('",  # torch refuses '.' in module names, so payloads avoid it
    'b"""\nopen("{m}", "w")\n"""',
    "c\\\nopen('{m}', 'w')#",
    "class", "print", "lambda", "None", "λayer_ünïcode", "x" * 300, "1starts_with_digit", "__dunder__", "dup",
    "dup_",
]


class Evil(nn.Module):
    """One ``nn.Linear(4, 4)`` per name in ``EVIL`` (marker filled in), applied in turn with a relu."""

    def __init__(self, marker):
        super().__init__()
        self.names = []
        for i, raw in enumerate(EVIL):
            name = raw.format(m=marker)
            self.add_module(name, nn.Linear(4, 4))
            self.names.append(name)

    def forward(self, x):
        for name in self.names:
            x = torch.relu(getattr(self, name)(x))
        return x
