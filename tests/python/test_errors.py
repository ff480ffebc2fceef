"""C++ Status errors arrive as tessel.Error subclasses whose message and attributes name the file,
the input or the node."""

import numpy as np
import pytest

import tessel
from conftest import SMALL_CNN, add_model, make_model


def test_missing_file(tmp_path):
    path = tmp_path / "missing.onnx"
    with pytest.raises(tessel.NotFoundError) as info:
        tessel.compile(path)
    e = info.value
    assert isinstance(e, tessel.Error) and isinstance(e, FileNotFoundError)
    assert e.code == "file-not-found"
    assert e.file == str(path)
    assert str(path) in str(e)


def test_garbage_bytes_do_not_parse():
    with pytest.raises(tessel.Error) as info:
        tessel.compile(b"this is not a protobuf")
    assert isinstance(info.value, (tessel.ParseError, tessel.InvalidModelError))
    assert "<bytes>" in str(info.value)


def test_load_of_an_onnx_file_is_not_an_artifact():
    with pytest.raises(tessel.ParseError, match="not a tessel artifact"):
        tessel.load(SMALL_CNN)


def test_unknown_target():
    with pytest.raises(tessel.InvalidArgumentError) as info:
        tessel.compile(SMALL_CNN, target="tpu-v9")
    assert "tpu-v9" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_wrong_feed_shape_names_the_input_and_file(small_cnn_cpu):
    with pytest.raises(tessel.Error) as info:
        small_cnn_cpu(np.zeros((2, 3, 28, 28), np.float32))
    e = info.value
    assert isinstance(e, (tessel.ShapeMismatchError, tessel.InvalidArgumentError))
    assert "image" in str(e)
    assert "small_cnn.onnx" in str(e)


def test_feed_names_are_checked(small_cnn_cpu, small_cnn_input):
    with pytest.raises(tessel.InvalidArgumentError, match="small_cnn.onnx: the model has no input named 'img'"):
        small_cnn_cpu.run(None, {"img": small_cnn_input})
    with pytest.raises(tessel.InvalidArgumentError, match="input 'image' .* was not given"):
        small_cnn_cpu.run(None, {})
    with pytest.raises(tessel.InvalidArgumentError, match="feed names are strings"):
        small_cnn_cpu.run(None, {0: small_cnn_input})


def test_unknown_output_name():
    exe = tessel.compile(add_model(), target="cpu")
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(tessel.InvalidArgumentError, match="'w' is not an output of the model; its outputs: 'y', 'z'"):
        exe.run(["w"], {"a": a, "b": a})


def test_feed_that_is_not_numbers():
    exe = tessel.compile(add_model(), target="cpu")
    with pytest.raises(tessel.InvalidArgumentError, match="feed 'a'"):
        exe.run(None, {"a": "abc", "b": np.zeros((2, 3), np.float32)})


def test_too_many_positional_inputs():
    exe = tessel.compile(add_model(), target="cpu")
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(tessel.InvalidArgumentError, match="3 inputs given; the model takes 2"):
        exe(a, a, a)


def test_unsupported_op_names_the_node():
    from onnx import helper

    model = make_model([helper.make_node("NoSuchOp", ["x"], ["y"], name="odd_one")],
                       [("x", np.float32, [2])], [("y", np.float32, [2])])
    with pytest.raises(tessel.Error) as info:
        tessel.compile(model, target="cpu")
    e = info.value
    assert isinstance(e, (tessel.UnsupportedOpError, tessel.InvalidModelError))
    assert "NoSuchOp" in str(e)
    assert e.node == "odd_one" or "odd_one" in str(e)
