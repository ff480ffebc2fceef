"""The accelerator tools: library kernels, profiles and the run summary of an nc-v2 executable."""

import json

import numpy as np
import pytest

import tessel
from conftest import SMALL_CNN


@pytest.fixture(scope="module")
def small_cnn_nc():
    return tessel.compile(SMALL_CNN, target="nc-v2", batch=2)


def test_kernels_list_matmul():
    kernels = {k.name: k for k in tessel.nc.kernels()}
    assert "matmul" in kernels
    assert {"M", "N", "K"} <= set(kernels["matmul"].dims)
    assert kernels["matmul"].dtypes


def test_kernel_run_small_matmul(tmp_path):
    r = tessel.nc.kernel_run("matmul", target="nc-v2", shape={"M": 128, "N": 128, "K": 128}, seed=3,
                             profile_dir=tmp_path / "profile")
    assert r.checked and r.passed
    assert r.races == 0
    assert r.latency_us > 0 and r.instructions > 0
    assert 0 < r.mfu_percent <= 100
    assert r.bounding_engine
    assert r.summary and str(r) == r.summary
    assert (tmp_path / "profile" / "report.html").exists()


def test_kernel_run_timing_only_is_not_checked():
    r = tessel.nc.kernel_run("matmul", shape={"M": 128, "N": 128, "K": 128}, timing_only=True)
    assert not r.checked and r.latency_us > 0


def test_kernel_run_errors():
    with pytest.raises(tessel.InvalidArgumentError, match="unknown kernel 'nope'"):
        tessel.nc.kernel_run("nope")
    with pytest.raises(tessel.InvalidArgumentError):
        tessel.nc.kernel_run("matmul", shape={"Q": 4})


def test_nc_run_summary(small_cnn_nc, small_cnn_input):
    y = small_cnn_nc(small_cnn_input)
    assert y.shape == (2, 10)
    expected = np.load(SMALL_CNN.parent / "small_cnn_expected.npy")
    # Auto-cast to bf16 for matmul operands: close, not exact.
    np.testing.assert_allclose(y, expected, atol=2e-2)
    s = small_cnn_nc.last_run
    assert s.simulated and s.latency_us > 0 and s.device_us > 0
    assert 0 < s.mfu_percent <= 100
    assert s.bounding_engine
    assert s.device_nodes > 0
    assert len(s.fallbacks) == s.host_nodes
    html = small_cnn_nc._repr_html_()
    assert "mfu_percent" in html and "bounding_engine" in html and "nc-v2" in html


def test_profile_writes_the_report(small_cnn_nc, tmp_path):
    summary = small_cnn_nc.profile(tmp_path / "prof")
    assert (tmp_path / "prof" / "report.html").exists()
    assert summary.simulated and summary.latency_us > 0


def test_timeline_is_perfetto_json(small_cnn_nc):
    trace = json.loads(small_cnn_nc.timeline())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace[0]["traceEvents"]
    assert events


def test_cpu_has_no_timeline(small_cnn_cpu):
    with pytest.raises(tessel.Error):
        small_cnn_cpu.timeline()


def test_nc_save_and_load_round_trip(small_cnn_nc, small_cnn_input, tmp_path):
    small_cnn_nc.save(tmp_path / "small_cnn-nc-v2.tsl")
    loaded = tessel.load(tmp_path / "small_cnn-nc-v2.tsl")
    assert loaded.target == "nc-v2"
    assert loaded(small_cnn_input).tobytes() == small_cnn_nc(small_cnn_input).tobytes()


def test_buckets_serve_every_length_up_to_the_largest(tmp_path):
    from onnx import helper
    from conftest import make_model

    w = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                       [("x", np.float32, [1, "S", 16])], [("y", np.float32, [1, "S", 16])], [("w", w)])
    exe = tessel.compile(model.SerializeToString(), target="nc-v2", buckets={"S": [4, 8]}, auto_cast="none")
    for length in (1, 3, 4, 5, 8):
        x = np.random.default_rng(length).standard_normal((1, length, 16)).astype(np.float32)
        np.testing.assert_allclose(exe(x), np.maximum(x @ w, 0), atol=1e-4)
        assert exe.last_run.bucket == ("S=4" if length <= 4 else "S=8")
        assert exe.last_run.padding_waste == pytest.approx(1 - length / (4 if length <= 4 else 8))
    with pytest.raises(tessel.ShapeMismatchError, match=r"is 9, larger than the largest bucket S=8"):
        exe(np.zeros((1, 9, 16), np.float32))
    path = tmp_path / "buckets.tsl"
    exe.save(path)
    x = np.ones((1, 6, 16), np.float32)
    np.testing.assert_array_equal(tessel.load(path)(x), exe(x))
