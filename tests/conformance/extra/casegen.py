"""Shared writer for the extra conformance cases: each case is <root>/<name>/model.onnx plus
test_data_set_0/{input,output}_N.pb, the layout `tessel conformance` reads."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tensor_type(array):
    """The ONNX element type of a numpy array (object arrays hold strings)."""
    if array.dtype == np.object_:
        return TensorProto.STRING
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype]


def node_case(root, name, node, inputs, outputs, opset, ir_version=None):
    """Writes a one-node model; `inputs` and `outputs` are lists of (value name, numpy array)."""
    case_dir = os.path.join(root, name)
    os.makedirs(os.path.join(case_dir, "test_data_set_0"))
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, tensor_type(v), v.shape) for n, v in inputs],
        [helper.make_tensor_value_info(n, tensor_type(v), v.shape) for n, v in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if ir_version is not None:
        model.ir_version = ir_version
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    for kind, values in (("input", inputs), ("output", outputs)):
        for i, (n, v) in enumerate(values):
            with open(os.path.join(case_dir, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())


def op_case(root, name, op, inputs, outputs, opset, **attrs):
    """A one-op case with inputs in0.. (None = omitted optional input) and outputs out0..; old
    opsets get the IR version of their time."""
    node = helper.make_node(op, [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)],
                            [f"out{i}" for i in range(len(outputs))], **attrs)
    node_case(root, name, node, [(f"in{i}", x) for i, x in enumerate(inputs) if x is not None],
              [(f"out{i}", y) for i, y in enumerate(outputs)], opset, ir_version=7 if opset >= 7 else 3)
