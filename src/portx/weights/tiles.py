"""Row-major copies of strided weight views (a transposed kernel), a band of rows at a time, made in square tiles.

Note [tiled copies]: most converted weights are views of the source's: Keras' ``Dense`` kernel is torch's
``Linear`` weight transposed (``weight.T``), a convolution's kernel a permutation of torch's. Writing one to a file
needs its bytes in row-major order, and NumPy copies a transposed view element by element down the source's
columns, so each element read touches another cache line (and, for a memory-mapped weight, another page): 20 to
40 ns an element on a busy 2-core machine, minutes for the 8 billion values of an 8B decoder. Copying square tiles
of ``TILE_BYTES`` (256 x 256 bfloat16 values) keeps the lines a tile reads in the cache while its rows are written:
3 to 4 times faster there (a 14336 x 4096 bfloat16 kernel: 0.5 s against 2 s). ``strips`` hands out the copy a
band of rows at a time, so a writer holds one band (``STRIP_BYTES``), never a second whole array. (JAX needs none
of this: ``jnp.asarray`` of a transposed view is transposed by XLA, in tiles of its own.)

Example:
    >>> for first, rows in strips(torch_weight.T):  # np.ascontiguousarray's rows, a band at a time
    ...     dataset[first:first + len(rows)] = rows
"""
from __future__ import annotations

import numpy as np

__all__ = ["strips", "TILE_BYTES", "STRIP_BYTES"]

#: bytes of a square tile: within a core's L2 cache (256 x 256 bfloat16 values, 176 x 176 float32 ones)
TILE_BYTES = 128 << 10
#: bytes of rows ``strips`` copies at a time (at least a tile's side of rows, or the whole array)
STRIP_BYTES = 16 << 20
_SMALL = 1 << 20  # below this, a plain copy: the tiles' Python loop would cost more than it saves


def strips(array, nbytes=STRIP_BYTES):
    """Yield (first row, C-ordered copy of a band of rows) over ``array``'s first axis, the bands ``nbytes`` or
    a tile's side of rows each, whichever is more; a C-ordered array yields views of itself, another one buffer refilled
    for each band (write it before taking the next; Note [tiled copies]).

    Example: ``[first for first, _ in strips(np.zeros((600, 4096), np.float32), 4 << 20)]`` -> ``[0, 256, 512]``.
    """
    array = np.asarray(array)
    if array.ndim == 0 or array.size == 0:
        yield 0, np.array(array, order="C")  # ascontiguousarray makes a scalar one-dimensional
        return
    row = max(array[:1].nbytes, 1)
    count = max(_side(array), nbytes // row)
    band = None if array.flags.c_contiguous else np.empty((min(count, len(array)),) + array.shape[1:], array.dtype)
    for first in range(0, len(array), count):
        rows = array[first:first + count]
        if band is not None:
            rows = _copy(band[:len(rows)], rows)
        yield first, rows


def _copy(out, array) -> np.ndarray:
    """``out[...] = array``, by tiles of the first and last axes where the last axis is strided."""
    if array.ndim < 2 or array.nbytes < _SMALL or array.strides[-1] == array.itemsize:
        out[...] = array
        return out
    side = _side(array)
    for i in range(0, array.shape[0], side):
        for j in range(0, array.shape[-1], side):
            out[i:i + side, ..., j:j + side] = array[i:i + side, ..., j:j + side]
    return out


def _side(array) -> int:
    """Elements along a tile's side for ``array``'s dtype: a multiple of 16 whose square fits ``TILE_BYTES``."""
    return max(16, int((TILE_BYTES // array.itemsize) ** 0.5) // 16 * 16)
