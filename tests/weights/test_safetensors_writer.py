"""Streamed safetensors (Note [streamed safetensors]): the header from shapes and dtypes, tensors written one at a
time, read back by safetensors itself; a tensor whose bytes differ from its declaration is refused."""
import ml_dtypes
import numpy as np
import pytest

from portx.weights.safetensors_writer import write_streamed

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def test_streamed_file_reads_back_with_safetensors_one_tensor_asked_at_a_time(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {"fc.weight": rng.standard_normal((4, 3)).astype(np.float32).T,  # a strided view, written in C order
              "emb": rng.standard_normal((5, 2)).astype(ml_dtypes.bfloat16), "step": np.array(7, np.int64)}
    asked = []
    size = write_streamed(tmp_path / "m.safetensors", {k: (str(a.dtype), a.shape) for k, a in arrays.items()},
                          lambda k: asked.append(k) or arrays[k], metadata={"format": "pt"})
    assert asked == list(arrays) and size == sum(a.nbytes for a in arrays.values())
    back = safetensors_numpy.load_file(str(tmp_path / "m.safetensors"))
    for key, array in arrays.items():
        assert back[key].dtype == array.dtype and back[key].shape == array.shape
        np.testing.assert_array_equal(back[key], array)


def test_bytes_that_differ_from_the_declaration_are_refused(tmp_path):
    with pytest.raises(ValueError, match="w: 12 bytes given, 24 declared"):
        write_streamed(tmp_path / "m.safetensors", {"w": ("float32", (2, 3))}, lambda k: np.zeros(3, np.float32))
