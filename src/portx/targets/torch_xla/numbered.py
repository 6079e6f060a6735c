"""Block classes whose submodules are named after the block's number, as a Keras source named them.

Note [submodules named after their block]: keras.applications' ConvNeXt builds each downsampling block as a
``Sequential`` whose layers carry the block's number as well (``convnext_tiny_downsampling_block_0`` holds
``convnext_tiny_downsampling_layernorm_0``; ``numbered_locals`` in targets/auto_names.py), so the source's paths,
and the state_dict keys the flat code keeps, are ``convnext_tiny_downsampling_block_0.convnext_tiny_downsampling_
layernorm_0.weight``. One class with fixed attribute names would move those keys (``....layernorm.weight``) and need
a key map in ``load_model()``; a property or a second attribute aliasing the module would write every weight twice
in the state_dict. The class therefore takes the block's number and registers each such submodule under its
source's name, as a person mirroring the Keras code writes it, and ``forward`` takes them back from
``self.children()`` in the order ``__init__`` made them::

    class DownsamplingBlock(nn.Module):
        def __init__(self, in_channels, n):
            super().__init__()
            self.add_module(f'convnext_tiny_downsampling_layernorm_{n}', nn.LayerNorm(in_channels, eps=1e-06))
            self.add_module(f'convnext_tiny_downsampling_conv_{n}', nn.Conv2d(in_channels, 2 * in_channels, ...))

        def forward(self, x):
            convnext_tiny_downsampling_layernorm, convnext_tiny_downsampling_conv = self.children()
            ...

Each block is then held at its own path (``self.convnext_tiny_downsampling_block_0 = DownsamplingBlock(96, 0)``;
Note [blocks held one by one] in containers.py), so every key is the source's, in its order. Only blocks whose every
submodule is so named are written this way (``children()`` then lists exactly them); others with such names stay
flat, as before. keras-jax writes the same names from the block's number in its block function (Note [nested models'
scopes] in keras_jax/scopes.py).

Example:
    >>> number_submodules(init, body, numbered)   # True: init.numbered == {"conv": "conv_0"}, init.numbers + ["0"]
"""
from __future__ import annotations

import re

__all__ = ["number_submodules", "numbered_column", "add_modules", "module_name", "unnumbered"]


def number_submodules(init, body, numbered) -> bool:
    """Rewrite the ``("a", name)`` pieces of a block's ``init`` and ``body`` Instances whose submodule is named after
    the block's number (``numbered``: {layer name: (stem, number)}, ``numbered_locals``) to their stem, record
    ``init.numbered`` ({stem: name}) and append the number to ``init.numbers`` (an ``__init__`` argument); False,
    with nothing changed, unless every submodule of the block is so named, with one number (Note [submodules named
    after their block])."""
    names = {value for parts, _ in init.rows for kind, value in parts if kind == "a"}
    if not names or not all(isinstance(v, str) and v in numbered for v in names):
        return False
    if len({numbered[v][1] for v in names}) != 1 or len({numbered[v][0] for v in names}) != len(names):
        return False
    if any(kind == "a" and value not in names for parts, _ in body.rows for kind, value in parts):
        return False
    stem = {v: numbered[v][0] for v in names}
    for inst in (init, body):
        inst.rows = [([("a", stem[v]) if k == "a" else (k, v) for k, v in parts], comment)
                     for parts, comment in inst.rows]
    init.numbered = {s: v for v, s in stem.items()}
    init.numbers.append(str(numbered[next(iter(names))][1]))
    return True


def numbered_column(init) -> int | None:
    """The number column (``init.numbers``) of the block's number, where its submodules are named after it."""
    return len(init.numbers) - 1 if init.numbered else None


def add_modules(init_rows, forward_rows, stems, number, local) -> tuple | None:
    """(init rows, forward rows) of a class whose submodules ``stems`` are named after the block's number (the
    argument ``number``): ``self.add_module(f'<stem>_{n}', ...)`` and, first in ``forward``, the modules taken from
    ``self.children()`` as locals (``local``: {stem: its variable}); None where ``__init__`` makes a module of another
    name (Note [submodules named after their block])."""
    made, init = [], []
    for indent, text, comment in init_rows:
        found = re.match(r"^self\.(\w+) = (.*)$", text)
        if found and found.group(1) in stems:
            made.append(found.group(1))
            init.append((indent, f"self.add_module(f'{found.group(1)}_{{{number}}}', {found.group(2)})", comment))
        elif found or text.startswith("self.add_module("):
            return None
        else:
            init.append((indent, text, comment))
    if sorted(made) != sorted(stems):
        return None
    calls = re.compile(r"(?<![\w.])self\.(" + "|".join(map(re.escape, stems)) + r")\b")
    forward = [(indent, calls.sub(lambda m: local[m.group(1)], text), comment)
               for indent, text, comment in forward_rows]
    names = ", ".join(local[s] for s in made)
    head = (forward_rows[0][0] if forward_rows else 2, f"{names}{',' if len(made) == 1 else ''} = self.children()",
            "named after the block's number")
    return init, [head] + forward


def module_name(stem, parent) -> str:
    """The local ``forward`` takes a numbered submodule as: its stem after the blocks' container's name
    (``convnext_tiny_downsampling_conv`` in ``convnext_tiny_downsampling`` -> ``conv``)."""
    head = re.sub(r"[^0-9A-Za-z_]+", "_", parent).lower() + "_"
    return stem[len(head):] if stem.startswith(head) and len(stem) > len(head) else stem


def unnumbered(name, numbered) -> str:
    """A local's name in its block without the block's number: ``conv_0_nchw`` -> ``conv_nchw`` (``numbered``: {stem:
    name}, ``Instance.numbered``)."""
    for stem, own in numbered.items():
        if name == own or name.startswith(own + "_"):
            return stem + name[len(own):]
    return name
