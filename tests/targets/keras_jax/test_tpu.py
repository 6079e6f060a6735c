"""TPU proof: lowering for the tpu platform, the StableHLO scan, and the jax.export artifact."""
import os
from pathlib import Path

import jax
import numpy as np
import pytest
import torch

import portx
from portx.targets.stablehlo import scan_stablehlo
from tests.support.paths import SAMPLE


@pytest.mark.parametrize("text,problem", [
    ("%0 = stablehlo.add %a, %b : tensor<2xf64>", "float64"),
    ("%0 = stablehlo.add %a, %b : tensor<?x3xf32>", "dynamic dimensions"),
    ("%0 = stablehlo.custom_call @xla_python_cpu_callback(%a)", "host callback"),
    ("%0 = stablehlo.custom_call @lapack_sgesdd(%a)", "not known to exist on TPU"),
])
def test_scan_flags_what_tpus_reject(text, problem):
    assert any(problem in p for p in scan_stablehlo(text)["problems"])


def test_scan_counts_ops():
    text = "stablehlo.convolution stablehlo.convolution stablehlo.add func.return"
    assert scan_stablehlo(text)["ops"] == {"convolution": 2, "add": 1}


def test_conversion_reports_tpu_lowering_and_exports_artifact(tmp_path):
    result = portx.convert(str(SAMPLE), out=tmp_path / "out", export_tpu=True)
    tpu = result.report["tpu"]
    assert tpu["verdict"] == "ok", tpu
    assert tpu["ops"]["convolution"] == 3
    artifact = result.files["tpu_artifact"]
    assert tpu["artifact"]["path"] == str(artifact) and Path(tpu["artifact"]["weights"]).is_file()  # in OUT
    exported = jax.export.deserialize(bytearray(artifact.read_bytes()))
    assert set(exported.platforms) == {"tpu", "cpu"}
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    # docs/tpu.md's loading recipe, with JAX and NumPy only
    w = np.load(str(artifact) + ".weights.npz")
    trainable = [w[k] for k in sorted(w.files) if k.startswith("trainable_")]
    non_trainable = [w[k] for k in sorted(w.files) if k.startswith("non_trainable_")]
    got = exported.call(trainable, non_trainable, x)
    source = torch.export.load(str(SAMPLE)).module()
    with torch.no_grad():
        want = source(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-4, rtol=1e-4)
    assert os.path.getsize(artifact) > 0
