"""The direct sharded writer (targets/keras_jax/sharded.py, Note [sharded keras weights]) writes what Keras'
own ``save_weights(..., max_shard_size=)`` writes for the same model: the same index, shards, groups, datasets,
dtypes, values and attributes; the emitted ``load_model()`` reads it; too small a shard is one line."""
import json

import h5py
import numpy as np
import pytest
import torch
from torch import nn

import portx
from portx.errors import BadValue
from portx.targets import TARGETS
from portx.weights import shard_gb


class Mixed(nn.Module):
    """Layers of several kinds: embedding, convolution + batch norm (non-trainable state), layer norm, dropout
    (a seed the emit rules do not give), dense layers and a parameter used directly."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.conv = nn.Conv1d(16, 16, 3, padding=1)
        self.bn = nn.BatchNorm1d(16)
        self.norm = nn.LayerNorm(16)
        self.drop = nn.Dropout(0.1)
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 8)
        self.scale = nn.Parameter(torch.randn(8))

    def forward(self, ids):
        h = self.embed(ids).transpose(1, 2)
        h = self.bn(self.conv(h)).transpose(1, 2)
        h = self.drop(self.norm(h))
        return self.fc2(torch.relu(self.fc1(h))) * self.scale


def _contents(folder):
    """{(shard, h5 path): (dtype, shape, bytes or None, attrs)} over every shard, and the index's weight map."""
    index = json.loads((folder / "model.weights.json").read_text())
    found = {}
    for shard in sorted(folder.glob("model_*.weights.h5")):
        with h5py.File(shard) as f:
            def visit(path, obj, shard=shard.name):
                data = obj[()].tobytes() if isinstance(obj, h5py.Dataset) else None
                shape = obj.shape if isinstance(obj, h5py.Dataset) else None
                found[(shard, path)] = (str(getattr(obj, "dtype", "")), shape, data,
                                        {k: str(v) for k, v in obj.attrs.items()})
            f.visititems(visit)
    return index, found


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (2, 6), generator=torch.Generator().manual_seed(0))
    folder = tmp_path_factory.mktemp("sharded") / "out"
    portx.convert(Mixed().eval(), example_inputs=(ids,), out=folder, max_shard_size="8KB", grad=False)
    return folder


def test_the_direct_writer_writes_what_keras_save_weights_writes(out, tmp_path):
    model = TARGETS["keras-jax"].load(out)  # the emitted load_model()
    (tmp_path / "keras").mkdir()
    model.save_weights(tmp_path / "keras" / "model.weights.json", max_shard_size=shard_gb("8KB"))
    ours, theirs = _contents(out), _contents(tmp_path / "keras")
    assert len(list(out.glob("model_*.weights.h5"))) >= 2  # several shards
    assert ours[0] == theirs[0]
    assert ours[1].keys() == theirs[1].keys()
    for key in ours[1]:
        assert ours[1][key] == theirs[1][key], key


def test_load_model_reads_the_shards_it_points_at(out):
    text = (out / "model.py").read_text()
    assert "'model.weights.json'" in text and "model.load_weights(weights)" in text
    model = TARGETS["keras-jax"].load(out)
    assert len(model.weights) > 10 and not (out / "model.weights.h5").exists()


def test_a_weight_larger_than_a_shard_is_one_line(tmp_path):
    with pytest.raises(BadValue, match=r"--max-shard-size 1.0 kB: weight .* alone is 16.4 kB"):
        portx.convert(nn.Linear(64, 64), example_inputs=(torch.randn(2, 64),), out=tmp_path / "o",
                      max_shard_size="1KB", verify=False)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("make", [
    lambda rng: rng.standard_normal((700, 900), dtype=np.float32).astype("bfloat16").T,  # a Dense kernel, tiled
    lambda rng: rng.standard_normal((32, 48, 3, 3), dtype=np.float32).transpose(2, 3, 1, 0),  # a conv kernel
    lambda rng: rng.standard_normal((300, 1000), dtype=np.float32),
    lambda rng: np.asarray(rng.integers(0, 9, ()), np.int64),
    lambda rng: np.zeros((0, 4), np.float32),
    lambda rng: rng.integers(0, 2, (5, 3)).astype(bool)[:, ::2],
], ids=["bfloat16-transposed", "conv-permuted", "contiguous", "scalar", "empty", "bool-strided"])
def test_write_dataset_writes_what_keras_h5_store_writes(make, tmp_path, monkeypatch):
    import ml_dtypes  # noqa: F401 - numpy's "bfloat16" dtype name
    from keras.src.saving.saving_lib import H5IOStore

    from portx.targets.keras_jax.sharded import write_dataset
    from portx.weights import tiles

    monkeypatch.setattr(tiles, "STRIP_BYTES", 64 << 10)  # several bands
    monkeypatch.setattr(tiles, "_SMALL", 0)  # tiles even for these small arrays
    array = make(np.random.default_rng(0))
    theirs = H5IOStore(tmp_path / "keras.h5", mode="w")
    theirs.make("layers/dense")
    theirs["0"] = array
    theirs.close()
    with h5py.File(tmp_path / "ours.h5", "w") as f:
        write_dataset(f.create_group("layers/dense").create_group("vars"), "0", array)
    ours, keras_own = _contents_of(tmp_path / "ours.h5"), _contents_of(tmp_path / "keras.h5")
    assert ours == keras_own and len(ours) == 1


def _contents_of(path):
    with h5py.File(path) as f:
        found = {}
        f.visititems(lambda name, obj: found.setdefault(name, (
            str(obj.dtype), obj.shape, obj[()].tobytes(), dict(obj.attrs)) if isinstance(obj, h5py.Dataset) else None))
        return {k: v for k, v in found.items() if v is not None}
