"""The Python API and the command-line tool give the same outputs, bit for bit: compile and run the
bundled example (and a benchmark model, when bench/make_models.py has made it) for cpu and nc-v2
both ways."""

import subprocess

import numpy as np
import pytest

import tessel
from conftest import ROOT, SMALL_CNN, SMALL_CNN_INPUT

BENCH_MODEL = ROOT / "bench" / "models" / "mobilenet_v2_b1.onnx"


def cli_outputs(cli, model, target, inputs, tmp_path, compile_flags=()):
    """`tessel compile` to an artifact, then `tessel run` of it with the .npy inputs; the outputs by name."""
    artifact = tmp_path / f"model-{target}.tsl"
    out = tmp_path / f"out-{target}"
    subprocess.run([cli, "compile", model, "--target", target, *compile_flags, "-o", artifact], check=True,
                   capture_output=True)
    feeds = [a for name, path in inputs.items() for a in ("--input", f"{name}={path}")]
    subprocess.run([cli, "run", artifact, *feeds, "--output-dir", out], check=True, capture_output=True)
    return {p.stem: np.load(p) for p in out.glob("*.npy")}


@pytest.mark.parametrize("target", ["cpu", "nc-v2"])
def test_small_cnn_matches_the_cli(cli, target, tmp_path):
    expected = cli_outputs(cli, SMALL_CNN, target, {"image": SMALL_CNN_INPUT}, tmp_path, ("--batch", "2"))
    exe = tessel.compile(SMALL_CNN, target=target, batch=2)
    (y,) = exe.run(None, {"image": np.load(SMALL_CNN_INPUT)})
    assert list(expected) == ["probabilities"]
    assert y.dtype == expected["probabilities"].dtype and y.shape == expected["probabilities"].shape
    assert y.tobytes() == expected["probabilities"].tobytes()


@pytest.mark.skipif(not BENCH_MODEL.exists(), reason="bench/models not made (bench/make_models.py)")
@pytest.mark.parametrize("target", ["cpu", "nc-v2"])
def test_benchmark_model_matches_the_cli(cli, target, tmp_path):
    exe = tessel.compile(BENCH_MODEL, target=target)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in exe.inputs:
        feeds[i.name] = rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(i.dtype)
        np.save(tmp_path / f"{i.name}.npy", feeds[i.name])
    expected = cli_outputs(cli, BENCH_MODEL, target, {n: tmp_path / f"{n}.npy" for n in feeds}, tmp_path)
    outputs = exe.run(None, feeds)
    assert len(outputs) == len(expected)
    for info, y in zip(exe.outputs, outputs):
        assert y.tobytes() == expected[info.name].tobytes(), info.name
