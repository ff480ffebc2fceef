"""tessel.InferenceSession is shaped like onnxruntime's and gives what a direct run gives."""

import numpy as np
import pytest

import tessel
from conftest import SMALL_CNN


def test_session_matches_a_direct_run(small_cnn_input):
    sess = tessel.InferenceSession(str(SMALL_CNN), providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["cpu"]
    (inp,) = sess.get_inputs()
    assert (inp.name, inp.shape, inp.type) == ("image", ["N", 1, 28, 28], "tensor(float)")
    (out,) = sess.get_outputs()
    assert out.name == "probabilities" and out.type == "tensor(float)"
    (y,) = sess.run(None, {inp.name: small_cnn_input})
    direct = tessel.compile(SMALL_CNN, target="cpu")(small_cnn_input)
    assert y.tobytes() == direct.tobytes()
    (y2,) = sess.run(["probabilities"], {"image": small_cnn_input})
    assert y2.tobytes() == y.tobytes()


def test_session_from_bytes_with_tessel_targets(small_cnn_input):
    ref = tessel.InferenceSession(SMALL_CNN.read_bytes(), providers=["ref"])
    assert ref.get_providers() == ["ref"]
    cpu = tessel.InferenceSession(SMALL_CNN.read_bytes())  # cpu by default
    assert cpu.get_providers() == ["cpu"]
    np.testing.assert_allclose(ref.run(None, {"image": small_cnn_input})[0],
                               cpu.run(None, {"image": small_cnn_input})[0], atol=1e-5)


def test_provider_options_reach_compile(small_cnn_input):
    sess = tessel.InferenceSession(str(SMALL_CNN), providers=[("cpu", {"shapes": {"image": [2, 1, 28, 28]}})])
    assert sess.get_inputs()[0].shape == [2, 1, 28, 28]


def test_unavailable_ort_providers_are_skipped():
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        sess = tessel.InferenceSession(str(SMALL_CNN), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["cpu"]


def test_unknown_provider():
    with pytest.raises(tessel.InvalidArgumentError, match="unknown provider 'gpu'"):
        tessel.InferenceSession(str(SMALL_CNN), providers=["gpu"])
    with pytest.raises(tessel.InvalidArgumentError, match="runs none of"):
        tessel.InferenceSession(str(SMALL_CNN), providers=["CUDAExecutionProvider"])
