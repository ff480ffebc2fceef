"""Shared fixtures of the Python package's tests: the repository's files, the CLI, tiny models.

Run with the built package on the path: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
(ctest -L python does this). Markers: `torch` (needs torch; left out under the sanitizers) and
`install` (pip-installs the package into a venv; a test of its own).
"""

import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SMALL_CNN = ROOT / "examples" / "small_cnn.onnx"
SMALL_CNN_INPUT = ROOT / "examples" / "small_cnn_input.npy"


def pytest_configure(config):
    config.addinivalue_line("markers", "torch: needs torch (not run under the sanitizers)")
    config.addinivalue_line("markers", "install: pip-installs the package into a temporary venv")


@pytest.fixture(scope="session")
def cli():
    """The tessel command-line tool: $TESSEL_CLI (set by ctest), else build/bin/tessel."""
    path = pathlib.Path(os.environ.get("TESSEL_CLI", ROOT / "build" / "bin" / "tessel"))
    if not path.exists():
        pytest.skip(f"no tessel CLI at {path}")
    return path


@pytest.fixture(scope="session")
def small_cnn_input():
    return np.load(SMALL_CNN_INPUT)


@pytest.fixture(scope="session")
def small_cnn_cpu():
    """examples/small_cnn.onnx compiled once for cpu, at the example input's batch."""
    import tessel

    return tessel.compile(SMALL_CNN, target="cpu", batch=2)


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    """An onnx.ModelProto from helper-made nodes and (name, numpy dtype, shape) inputs and outputs."""
    from onnx import helper, numpy_helper, mapping

    def info(name, dtype, shape):
        return helper.make_tensor_value_info(name, mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)], shape)

    graph = helper.make_graph(nodes, "test", [info(*i) for i in inputs], [info(*o) for o in outputs],
                              [numpy_helper.from_array(a, name) for name, a in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def identity_model(dtype=np.float32, shape=(2, 3)):
    from onnx import helper

    return make_model([helper.make_node("Identity", ["x"], ["y"])], [("x", dtype, shape)], [("y", dtype, shape)])


def add_model():
    """y = a + b over float32 [2, 3], and z = a * b: a model with two inputs and two outputs."""
    from onnx import helper

    return make_model([helper.make_node("Add", ["a", "b"], ["y"]), helper.make_node("Mul", ["a", "b"], ["z"])],
                      [("a", np.float32, [2, 3]), ("b", np.float32, [2, 3])],
                      [("y", np.float32, [2, 3]), ("z", np.float32, [2, 3])])
