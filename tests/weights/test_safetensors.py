"""The lazy safetensors store (weights/safetensors.py, Note [lazy weights]): what it reads equals what the
safetensors library reads, its tensors are views of the mapped file (no copy), pages can be released and read
again, and a damaged header is one line naming the file."""
import ml_dtypes
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from portx.errors import BadInput
from portx.weights import LazyStore, read_header, release_pages, shard_gb


@pytest.fixture
def saved(tmp_path):
    gen = torch.Generator().manual_seed(0)
    tensors = {"a.weight": torch.randn(64, 32, generator=gen).to(torch.bfloat16),
               "b.bias": torch.randn(7, generator=gen), "ids": torch.arange(5), "flag": torch.tensor([True, False])}
    save_file(tensors, tmp_path / "m.safetensors")
    return tmp_path / "m.safetensors"


def test_the_store_reads_what_safetensors_reads(saved):
    store, want = LazyStore.open([saved]), load_file(saved)
    assert set(store.entries) == set(want)
    for name, tensor in want.items():
        got = store.tensor(name)
        assert got.dtype == tensor.dtype and torch.equal(got, tensor), name
    assert store.array("a.weight").dtype == ml_dtypes.bfloat16
    assert set(store.layer("a.")) == {"a.weight"} and torch.equal(store.layer("b.")["b.bias"], want["b.bias"])
    assert store.nbytes() == sum(t.numel() * t.element_size() for t in want.values())


def test_tensors_are_views_of_the_mapped_file_and_survive_a_release(saved):
    store = LazyStore.open([saved])
    tensor = store.tensor("a.weight")
    ((mapped, start),) = store.regions()
    assert start <= tensor.data_ptr() < start + len(mapped)  # no copy: the pointer lies in the mapping
    before = tensor.clone()
    release_pages(tensor.view(torch.int16).numpy().T)  # found through views, transposes and torch
    store.release()
    release_pages(np.zeros(3))  # not mapped: nothing to do
    assert torch.equal(store.tensor("a.weight"), before)  # read from the file again


@pytest.mark.parametrize("cut, what", [(5, "truncated safetensors header"), (40, "truncated safetensors header"),
                                       (-8, r"tensor \S+ .* needs \d+ bytes")])
def test_a_damaged_file_is_one_line_naming_it(saved, cut, what):
    data = saved.read_bytes()
    saved.write_bytes(data[:cut])
    with pytest.raises(BadInput, match=what) as info:
        read_header(saved)
    assert str(saved) in str(info.value) and "\n" not in str(info.value)


def test_header_that_is_not_json(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes((10).to_bytes(8, "little") + b"not json!!" + b"\0" * 4)
    with pytest.raises(BadInput, match="not valid JSON"):
        read_header(bad)


def test_shard_sizes_read_as_keras_gb():
    assert shard_gb("2GB") == 2.0 and shard_gb("512MB") == 0.5 and shard_gb(1) == 1.0
    assert shard_gb("100KB") * 1024**3 == 100 * 1024
    with pytest.raises(ValueError, match="--max-shard-size"):
        shard_gb("lots")
