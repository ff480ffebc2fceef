"""tessel's Python API: compile from each kind of model, the calling conventions, metadata, save and
load, reports and summaries."""

import numpy as np
import onnx
import pytest

import tessel
from conftest import SMALL_CNN, add_model

A = np.arange(6, dtype=np.float32).reshape(2, 3)
B = np.full((2, 3), 0.5, dtype=np.float32)


def test_version_and_targets():
    assert tessel.__version__.count(".") == 2
    assert {"ref", "cpu", "nc-v2", "nc-v3"} <= set(tessel.targets())


@pytest.mark.parametrize("kind", ["path", "str", "bytes", "proto"])
def test_compile_takes_paths_bytes_and_protos(kind, small_cnn_input, small_cnn_cpu):
    model = {"path": SMALL_CNN, "str": str(SMALL_CNN), "bytes": SMALL_CNN.read_bytes(),
             "proto": onnx.load(str(SMALL_CNN))}[kind]
    exe = tessel.compile(model, target="cpu", batch=2)
    assert exe.target == "cpu"
    np.testing.assert_array_equal(exe(small_cnn_input), small_cnn_cpu(small_cnn_input))


def test_compile_rejects_other_objects():
    with pytest.raises(tessel.InvalidArgumentError, match="expected a path, bytes or an onnx.ModelProto"):
        tessel.compile(42)


def test_matches_the_expected_output(small_cnn_cpu, small_cnn_input):
    expected = np.load(SMALL_CNN.parent / "small_cnn_expected.npy")
    np.testing.assert_allclose(small_cnn_cpu(small_cnn_input), expected, atol=1e-5)


def test_metadata():
    exe = tessel.compile(SMALL_CNN, target="ref")
    (image,) = exe.inputs
    assert image.name == "image"
    assert image.dtype == np.float32
    assert image.shape == ["N", 1, 28, 28]  # The symbolic batch dim keeps its name.
    assert image.type == "tensor(float)"
    assert [o.name for o in exe.outputs] == ["probabilities"]


def test_run_conventions():
    exe = tessel.compile(add_model(), target="cpu")
    y, z = exe.run(None, {"a": A, "b": B})
    np.testing.assert_array_equal(y, A + B)
    np.testing.assert_array_equal(z, A * B)
    # Named outputs come in the order asked for.
    z2, y2 = exe.run(["z", "y"], {"a": A, "b": B})
    np.testing.assert_array_equal(z2, z)
    np.testing.assert_array_equal(y2, y)
    # Positional and keyword calls return a tuple for several outputs.
    for result in (exe(A, B), exe(a=A, b=B), exe(A, b=B)):
        assert isinstance(result, tuple) and len(result) == 2
        np.testing.assert_array_equal(result[0], y)
        np.testing.assert_array_equal(result[1], z)


def test_single_output_call_returns_an_array(small_cnn_cpu, small_cnn_input):
    out = small_cnn_cpu(small_cnn_input)
    assert isinstance(out, np.ndarray)
    assert out.shape == (2, 10) and out.dtype == np.float32


def test_feeds_are_converted_to_the_declared_dtype():
    exe = tessel.compile(add_model(), target="cpu")
    y, _ = exe.run(None, {"a": A.astype(np.float64), "b": B.tolist()})
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, A + B)


def test_save_and_load_round_trip(tmp_path, small_cnn_cpu, small_cnn_input):
    path = tmp_path / "small_cnn.tsl"
    small_cnn_cpu.save(path)
    loaded = tessel.load(path)
    assert loaded.target == "cpu"
    assert [i.name for i in loaded.inputs] == ["image"]
    assert loaded(small_cnn_input).tobytes() == small_cnn_cpu(small_cnn_input).tobytes()


def test_report_names_the_kernels(small_cnn_cpu):
    report = small_cnn_cpu.report()
    assert "Conv" in report


def test_last_run_and_html(small_cnn_cpu, small_cnn_input):
    small_cnn_cpu(small_cnn_input)
    summary = small_cnn_cpu.last_run
    assert isinstance(summary, tessel.RunSummary)
    assert not summary.simulated and summary.latency_us > 0
    html = small_cnn_cpu._repr_html_()
    assert "latency_us" in html and "image" in html and "cpu" in html


def test_op_profile(small_cnn_input):
    exe = tessel.compile(SMALL_CNN, target="cpu", batch=2)
    exe.set_profiling(True)
    for _ in range(3):
        exe(small_cnn_input)
    rows = exe.op_profile()
    assert rows and all(isinstance(r, tessel.OpProfile) for r in rows)
    assert {r.runs for r in rows} == {3}
    assert any("Conv" in r.op and r.kernel for r in rows)  # FusedConv after fusion.
    assert all(r.total_ms >= 0 for r in rows)


def test_compile_options_reach_the_compiler():
    exe = tessel.compile(SMALL_CNN, target="cpu", opt_level=0, threads=1, shapes={"image": [3, 1, 28, 28]})
    out = exe(np.zeros((3, 1, 28, 28), np.float32))
    assert out.shape == (3, 10)
    with pytest.raises(tessel.InvalidArgumentError, match="optLevel 7"):
        tessel.compile(SMALL_CNN, target="cpu", opt_level=7)


def test_unknown_compile_option():
    with pytest.raises(tessel.InvalidArgumentError, match="unknown compile option 'optimize'"):
        tessel.compile(SMALL_CNN, optimize=True)
    with pytest.raises(tessel.InvalidArgumentError, match="batch='two'"):
        tessel.compile(SMALL_CNN, batch="two")


def test_one_cpu_executable_serves_every_batch_within_its_dims(tmp_path, small_cnn_input):
    expected = np.load(SMALL_CNN.parent / "small_cnn_expected.npy")
    exe = tessel.compile(SMALL_CNN, target="cpu", dims={"N": (1, 4)})
    np.testing.assert_allclose(exe(small_cnn_input), expected, atol=1e-5)
    np.testing.assert_allclose(exe(small_cnn_input[:1]), expected[:1], atol=1e-5)
    with pytest.raises(tessel.ShapeMismatchError, match=r"input 'image' dim 0 \(N\) is 5, outside the range N=1..4"):
        exe(np.zeros((5, 1, 28, 28), np.float32))
    path = tmp_path / "every_batch.tsl"
    exe.save(path)
    loaded = tessel.load(path)
    np.testing.assert_allclose(loaded(np.concatenate([small_cnn_input, small_cnn_input[:1]])),
                               np.concatenate([expected, expected[:1]]), atol=1e-5)
    with pytest.raises(tessel.InvalidArgumentError, match="dims="):
        tessel.compile(SMALL_CNN, dims={"N": "many"})


def test_cpu_auto_cast_bf16(small_cnn_input, small_cnn_cpu):
    exe = tessel.compile(SMALL_CNN, target="cpu", batch=2, auto_cast="matmul")
    got = exe(small_cnn_input)
    assert "precision: auto-cast bf16" in exe.report()
    # bf16 operands, float32 sums: within bf16 rounding of the float32 plan.
    np.testing.assert_allclose(got, small_cnn_cpu(small_cnn_input), atol=1e-2)
    with pytest.raises(tessel.InvalidArgumentError, match="casts to bf16 only"):
        tessel.compile(SMALL_CNN, target="cpu", batch=2, auto_cast="matmul", auto_cast_type="fp16")
