"""Tiled copies of strided weight views (weights/tiles.py, Note [tiled copies]): the same values and order as
NumPy's own copy, a band of rows at a time, whatever the dtype, rank or strides."""
import ml_dtypes
import numpy as np
import pytest

from portx.weights import tiles
from portx.weights.tiles import strips

CASES = {
    "bfloat16 transposed": lambda rng: rng.standard_normal((700, 530), dtype=np.float32).astype(ml_dtypes.bfloat16).T,
    "float32 transposed": lambda rng: rng.standard_normal((300, 410), dtype=np.float32).T,
    "conv permuted": lambda rng: rng.standard_normal((40, 24, 3, 3), dtype=np.float32).transpose(2, 3, 1, 0),
    "sliced rows": lambda rng: rng.standard_normal((50, 64), dtype=np.float32)[::3],
    "contiguous": lambda rng: rng.standard_normal((20, 30), dtype=np.float32),
    "vector": lambda rng: rng.standard_normal(100, dtype=np.float32)[::2],
}


@pytest.fixture(autouse=True)
def small_tiles(monkeypatch):
    monkeypatch.setattr(tiles, "_SMALL", 0)  # the tiled path even for these small arrays
    monkeypatch.setattr(tiles, "STRIP_BYTES", 16 << 10)


@pytest.mark.parametrize("name", CASES)
def test_strips_cover_every_row_once_in_order(name):
    array = CASES[name](np.random.default_rng(0))
    bands = [(first, rows.copy()) for first, rows in strips(array)]
    assert [first for first, _ in bands] == sorted({first for first, _ in bands}) and bands[0][0] == 0
    assert all(rows.flags.c_contiguous for _, rows in bands)
    np.testing.assert_array_equal(np.concatenate([rows for _, rows in bands]), array)


def test_a_contiguous_array_is_not_copied():
    array = np.zeros((600, 4096), np.float32)
    assert [first for first, _ in strips(array, 4 << 20)] == [0, 256, 512]
    assert all(np.shares_memory(rows, array) for _, rows in strips(array))


def test_scalars_and_empty_arrays_are_one_band():
    assert [(f, r.shape) for f, r in strips(np.float32(3))] == [(0, ())]
    assert [(f, r.shape) for f, r in strips(np.zeros((0, 3)))] == [(0, (0, 3))]
