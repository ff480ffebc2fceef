#!/usr/bin/python3
"""Writes examples/small_cnn.onnx: a small image classifier (Conv-Relu-MaxPool-Conv-Relu-
GlobalAveragePool-Flatten-Gemm-Softmax) with fixed-seed random weights and a symbolic batch
dimension. The bundled example of the README; regenerate with `/usr/bin/python3 examples/make_small_cnn.py`."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(seed=7)


def weight(name, shape):
    fan_in = int(np.prod(shape[1:]))
    data = rng.standard_normal(shape).astype(np.float32) / np.sqrt(fan_in)
    return numpy_helper.from_array(data, name)


initializers = [
    weight("conv1.weight", (8, 1, 3, 3)),
    numpy_helper.from_array(np.zeros(8, np.float32), "conv1.bias"),
    weight("conv2.weight", (16, 8, 3, 3)),
    numpy_helper.from_array(np.full(16, 0.01, np.float32), "conv2.bias"),
    weight("fc.weight", (10, 16)),
    numpy_helper.from_array(np.zeros(10, np.float32), "fc.bias"),
]
nodes = [
    helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
    helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
    helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=1),
]
graph = helper.make_graph(
    nodes, "small_cnn",
    [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 1, 28, 28])],
    [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["N", 10])],
    initializer=initializers)
model = helper.make_model(graph, producer_name="tessel-examples", opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
here = os.path.dirname(os.path.abspath(__file__))
onnx.save(model, os.path.join(here, "small_cnn.onnx"))


# A golden input and output, computed here with plain numpy, for the end-to-end test.
def conv3x3_pad1(x, w, b):
    n, c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), np.float64)
    for i in range(3):
        for j in range(3):
            patch = padded[:, :, i:i + h, j:j + wd]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + b[None, :, None, None]


params = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in initializers}
image = rng.uniform(-1, 1, (2, 1, 28, 28)).astype(np.float32)
h = np.maximum(conv3x3_pad1(image.astype(np.float64), params["conv1.weight"], params["conv1.bias"]), 0)
h = h.reshape(2, 8, 14, 2, 14, 2).max(axis=(3, 5))
h = np.maximum(conv3x3_pad1(h, params["conv2.weight"], params["conv2.bias"]), 0)
logits = h.mean(axis=(2, 3)) @ params["fc.weight"].T + params["fc.bias"]
probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
probabilities /= probabilities.sum(axis=1, keepdims=True)
np.save(os.path.join(here, "small_cnn_input.npy"), image)
np.save(os.path.join(here, "small_cnn_expected.npy"), probabilities.astype(np.float32))
print(f"wrote {here}/small_cnn.onnx, small_cnn_input.npy, small_cnn_expected.npy")
